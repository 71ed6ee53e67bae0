"""PulseAudio and PipeWire (through pipewire-pulse) via `pactl`."""

from __future__ import annotations

import re
import shutil

from mcp_nexus.builtin.device.commands import (
    DEFAULT_TIMEOUT_SECONDS,
    CommandOutput,
    probe_command,
    run_command,
)
from mcp_nexus.builtin.device.errors import BackendError
from mcp_nexus.builtin.device.volume.base import VolumeReading

DEFAULT_SINK = "@DEFAULT_SINK@"
_PERCENT = re.compile(r"(\d+)%")
_MUTE = re.compile(r"Mute:\s*(yes|no)")


def parse_sink_volume(text: str) -> int:
    """Average the per-channel percentages of `pactl get-sink-volume` ("front-left: 27525 / 42% / ...")."""
    volume_line = next((line for line in text.splitlines() if "%" in line), "")
    percents = [int(value) for value in _PERCENT.findall(volume_line)]
    if not percents:
        raise BackendError(f"pactl printed no volume: {text.strip()[:200]!r}")
    return round(sum(percents) / len(percents))


def parse_sink_mute(text: str) -> bool:
    match = _MUTE.search(text)
    if match is None:
        raise BackendError(f"pactl printed no mute state: {text.strip()[:200]!r}")
    return match.group(1) == "yes"


class PactlVolume:
    """Volume of one PulseAudio sink (the default sink unless configured)."""

    name = "pactl"

    def __init__(
        self,
        *,
        sink: str = DEFAULT_SINK,
        pulse_server: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._sink = sink
        # PULSE_SERVER lets a gateway running as a service reach the user's sound server.
        self._env = {"PULSE_SERVER": pulse_server} if pulse_server else None
        self._timeout = timeout

    def probe(self) -> str | None:
        if shutil.which("pactl") is None:
            return "pactl not found"
        output = probe_command(["pactl", "get-sink-volume", self._sink], env=self._env)
        if not output.ok:
            return f"pactl cannot read sink {self._sink}: {output.reason()}"
        return None

    async def _pactl(self, *args: str) -> CommandOutput:
        output = await run_command(["pactl", *args], timeout=self._timeout, env=self._env)
        if not output.ok:
            raise BackendError(
                f"PulseAudio/PipeWire did not answer through pactl ({output.reason()}): "
                "start the sound server (pulseaudio or pipewire-pulse) or check PULSE_SERVER"
            )
        return output

    async def read(self) -> VolumeReading:
        volume = await self._pactl("get-sink-volume", self._sink)
        mute = await self._pactl("get-sink-mute", self._sink)
        return VolumeReading(
            level=parse_sink_volume(volume.stdout), muted=parse_sink_mute(mute.stdout), backend=self.name
        )

    async def write(self, level: int) -> VolumeReading:
        await self._pactl("set-sink-volume", self._sink, f"{level}%")
        return await self.read()
