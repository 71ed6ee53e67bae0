"""macOS output volume via `osascript` (AppleScript's volume settings)."""

from __future__ import annotations

import shutil
import sys

from mcp_nexus.builtin.device.commands import (
    DEFAULT_TIMEOUT_SECONDS,
    CommandOutput,
    probe_command,
    run_command,
)
from mcp_nexus.builtin.device.errors import BackendError
from mcp_nexus.builtin.device.volume.base import VolumeReading

_READ_SCRIPT = [
    "-e",
    "set s to get volume settings",
    "-e",
    'return (output volume of s as text) & "," & (output muted of s as text)',
]


def parse_volume_settings(text: str) -> tuple[int, bool | None]:
    """Parse "50,false"; an output device without volume control answers "missing value"."""
    level_text, _, muted_text = text.strip().partition(",")
    if not level_text.isdigit():
        raise BackendError(f"the current macOS output device has no volume control ({text.strip()!r})")
    muted = {"true": True, "false": False}.get(muted_text.strip())
    return int(level_text), muted


class OsascriptVolume:
    """The macOS system output volume."""

    name = "osascript"

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._timeout = timeout

    def probe(self) -> str | None:
        if sys.platform != "darwin":
            return "osascript only exists on macOS"
        if shutil.which("osascript") is None:
            return "osascript not found"
        output = probe_command(["osascript", *_READ_SCRIPT])
        if not output.ok:
            return f"osascript cannot read the volume: {output.reason()}"
        return None

    async def _osascript(self, *args: str) -> CommandOutput:
        output = await run_command(["osascript", *args], timeout=self._timeout)
        if not output.ok:
            raise BackendError(f"osascript failed ({output.reason()})")
        return output

    async def read(self) -> VolumeReading:
        output = await self._osascript(*_READ_SCRIPT)
        level, muted = parse_volume_settings(output.stdout)
        return VolumeReading(level=level, muted=muted, backend=self.name)

    async def write(self, level: int) -> VolumeReading:
        await self._osascript("-e", f"set volume output volume {level}")
        return await self.read()
