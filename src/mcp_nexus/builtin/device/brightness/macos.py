"""macOS built-in display via the `brightness` tool (Homebrew: `brew install brightness`)."""

from __future__ import annotations

import re
import shutil
import sys

from mcp_nexus.builtin.device.brightness.base import BrightnessReading
from mcp_nexus.builtin.device.commands import DEFAULT_TIMEOUT_SECONDS, probe_command, run_command
from mcp_nexus.builtin.device.errors import BackendError

_DISPLAY = re.compile(r"display (\d+): brightness ([0-9.]+)")


def parse_brightness_list(text: str) -> tuple[str, float]:
    """First display and its 0.0-1.0 brightness from `brightness -l`."""
    match = _DISPLAY.search(text)
    if match is None:
        raise BackendError(f"`brightness -l` reported no display with a brightness: {text.strip()[:200]!r}")
    return f"display {match.group(1)}", float(match.group(2))


class MacosBacklight:
    """The main display's brightness on macOS."""

    name = "macos"

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._timeout = timeout

    def probe(self) -> str | None:
        if sys.platform != "darwin":
            return "the macOS backend only runs on macOS"
        if shutil.which("brightness") is None:
            return "the `brightness` tool is not installed"
        output = probe_command(["brightness", "-l"])
        if not output.ok:
            return f"`brightness -l` failed: {output.reason()}"
        try:
            parse_brightness_list(output.stdout)
        except BackendError as exc:
            return str(exc)
        return None

    async def read(self) -> BrightnessReading:
        output = await run_command(["brightness", "-l"], timeout=self._timeout)
        if not output.ok:
            raise BackendError(f"`brightness -l` failed ({output.reason()})")
        display, fraction = parse_brightness_list(output.stdout)
        return BrightnessReading(level=round(fraction * 100), device=display, backend=self.name)

    async def write(self, level: int) -> BrightnessReading:
        output = await run_command(["brightness", f"{level / 100:.2f}"], timeout=self._timeout)
        if not output.ok:
            raise BackendError(f"`brightness` could not set the display ({output.reason()})")
        return await self.read()
