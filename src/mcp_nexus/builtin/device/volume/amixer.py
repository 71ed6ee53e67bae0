"""ALSA via `amixer`, using the mapped (alsamixer-like) volume scale."""

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

DEFAULT_CONTROL = "Master"
_CHANNEL = re.compile(r"^\s*[^:]+:\s*Playback\b.*?\[(\d+)%\](?:.*\[(on|off)\])?", re.MULTILINE)


def parse_simple_control(text: str) -> tuple[int, bool | None]:
    """Average level and mute state from `amixer sget` ("Front Left: Playback 24248 [37%] [on]")."""
    channels = _CHANNEL.findall(text)
    if not channels:
        raise BackendError(f"amixer printed no playback volume: {text.strip()[:200]!r}")
    level = round(sum(int(percent) for percent, _ in channels) / len(channels))
    switches = [switch for _, switch in channels if switch]
    muted = all(switch == "off" for switch in switches) if switches else None
    return level, muted


class AmixerVolume:
    """Volume of one ALSA simple mixer control (Master on the default card unless configured)."""

    name = "amixer"

    def __init__(
        self,
        *,
        control: str = DEFAULT_CONTROL,
        device: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._control = control
        # -M: the mapped scale alsamixer shows, so "50%" sounds like half volume.
        self._prefix = ["amixer", *(["-D", device] if device else []), "-M"]
        self._timeout = timeout

    def probe(self) -> str | None:
        if shutil.which("amixer") is None:
            return "amixer not found"
        output = probe_command([*self._prefix, "sget", self._control])
        if not output.ok:
            return f"amixer cannot read control {self._control!r}: {output.reason()}"
        return None

    async def _amixer(self, *args: str) -> CommandOutput:
        output = await run_command([*self._prefix, *args], timeout=self._timeout)
        if not output.ok:
            raise BackendError(
                f"ALSA mixer control {self._control!r} did not answer through amixer ({output.reason()}): "
                "check the sound card and the configured control"
            )
        return output

    async def read(self) -> VolumeReading:
        output = await self._amixer("sget", self._control)
        level, muted = parse_simple_control(output.stdout)
        return VolumeReading(level=level, muted=muted, backend=self.name)

    async def write(self, level: int) -> VolumeReading:
        # sset prints the control's new state, so no second call is needed.
        output = await self._amixer("sset", self._control, f"{level}%")
        new_level, muted = parse_simple_control(output.stdout)
        return VolumeReading(level=new_level, muted=muted, backend=self.name)
