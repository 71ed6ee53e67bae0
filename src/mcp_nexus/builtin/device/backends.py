"""Everything start-up detection found: the backends to use and the features left without one."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_nexus.builtin.device.brightness import BrightnessBackend, detect_brightness_backend
from mcp_nexus.builtin.device.brightness.sysfs import DEFAULT_BACKLIGHT_ROOT
from mcp_nexus.builtin.device.commands import DEFAULT_TIMEOUT_SECONDS
from mcp_nexus.builtin.device.missing import MissingBackend
from mcp_nexus.builtin.device.volume import VolumeBackend, detect_volume_backend
from mcp_nexus.builtin.device.volume.amixer import DEFAULT_CONTROL
from mcp_nexus.builtin.device.volume.pactl import DEFAULT_SINK


@dataclass(frozen=True, slots=True)
class DeviceBackends:
    """The outcome of detection; a feature is either served by a backend or listed in `missing`."""

    volume: VolumeBackend | None
    brightness: BrightnessBackend | None
    missing: list[MissingBackend] = field(default_factory=list)

    def names(self) -> dict[str, str | None]:
        return {
            "volume": self.volume.name if self.volume else None,
            "brightness": self.brightness.name if self.brightness else None,
        }


def detect_backends(
    *,
    backlight_root: str = DEFAULT_BACKLIGHT_ROOT,
    audio_backend: str = "auto",
    brightness_backend: str = "auto",
    backlight_device: str | None = None,
    pulse_server: str | None = None,
    pulse_sink: str = DEFAULT_SINK,
    alsa_device: str | None = None,
    alsa_control: str = DEFAULT_CONTROL,
    command_timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> DeviceBackends:
    """Probe the host (blocking, a few short helper runs). Bad option values raise ValueError."""
    if command_timeout <= 0:
        raise ValueError(f"command_timeout must be positive; got {command_timeout!r}")
    volume = detect_volume_backend(
        audio_backend,
        pulse_server=pulse_server,
        pulse_sink=pulse_sink,
        alsa_device=alsa_device,
        alsa_control=alsa_control,
        timeout=command_timeout,
    )
    brightness = detect_brightness_backend(
        brightness_backend,
        backlight_root=backlight_root,
        backlight_device=backlight_device,
        timeout=command_timeout,
    )
    missing = [found for found in (volume, brightness) if isinstance(found, MissingBackend)]
    return DeviceBackends(
        volume=None if isinstance(volume, MissingBackend) else volume,
        brightness=None if isinstance(brightness, MissingBackend) else brightness,
        missing=missing,
    )
