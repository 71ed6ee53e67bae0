"""Pick the volume backend at start-up, or say why there is none."""

from __future__ import annotations

import sys
from typing import Literal, get_args

from mcp_nexus.builtin.device.commands import DEFAULT_TIMEOUT_SECONDS
from mcp_nexus.builtin.device.missing import MissingBackend
from mcp_nexus.builtin.device.volume.amixer import DEFAULT_CONTROL, AmixerVolume
from mcp_nexus.builtin.device.volume.base import VolumeBackend
from mcp_nexus.builtin.device.volume.osascript import OsascriptVolume
from mcp_nexus.builtin.device.volume.pactl import DEFAULT_SINK, PactlVolume

AudioBackendChoice = Literal["auto", "pactl", "amixer", "osascript", "none"]
AUDIO_BACKEND_CHOICES: tuple[str, ...] = get_args(AudioBackendChoice)

_INSTALL_HINT = {
    "pactl": "pulseaudio-utils (pactl) with a running PulseAudio or PipeWire server",
    "amixer": "alsa-utils (amixer) with a sound card",
    "osascript": "osascript (part of macOS)",
}


def detect_volume_backend(
    choice: str = "auto",
    *,
    pulse_server: str | None = None,
    pulse_sink: str = DEFAULT_SINK,
    alsa_device: str | None = None,
    alsa_control: str = DEFAULT_CONTROL,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> VolumeBackend | MissingBackend:
    """The first backend whose probe passes, in the order of `choice` ('auto': the platform's usual order)."""
    if choice not in AUDIO_BACKEND_CHOICES:
        raise ValueError(f"audio_backend must be one of {', '.join(AUDIO_BACKEND_CHOICES)}; got {choice!r}")
    if choice == "none":
        return MissingBackend(feature="volume", reason="volume control disabled by configuration", install="")
    candidates: dict[str, VolumeBackend] = {
        "pactl": PactlVolume(sink=pulse_sink, pulse_server=pulse_server, timeout=timeout),
        "amixer": AmixerVolume(control=alsa_control, device=alsa_device, timeout=timeout),
        "osascript": OsascriptVolume(timeout=timeout),
    }
    if choice == "auto":
        order = ["osascript"] if sys.platform == "darwin" else ["pactl", "amixer"]
    else:
        order = [choice]
    failures: list[str] = []
    for name in order:
        backend = candidates[name]
        problem = backend.probe()
        if problem is None:
            return backend
        failures.append(problem)
    return MissingBackend(
        feature="volume",
        reason="no audio mixer found (" + "; ".join(failures) + ")",
        install="install " + ", or ".join(_INSTALL_HINT[name] for name in order),
    )
