"""`brightnessctl`: works without root through systemd-logind, on the real /sys/class/backlight."""

from __future__ import annotations

import shutil

from mcp_nexus.builtin.device.brightness.base import BrightnessReading, percent_of
from mcp_nexus.builtin.device.commands import DEFAULT_TIMEOUT_SECONDS, probe_command, run_command
from mcp_nexus.builtin.device.errors import BackendError


def parse_machine_readable(text: str) -> tuple[str, int, int]:
    """Device, current and max from `brightnessctl -m info` ("intel_backlight,backlight,400,40%,1000")."""
    for line in text.splitlines():
        fields = line.strip().split(",")
        if len(fields) == 5 and fields[2].isdigit() and fields[4].isdigit():
            return fields[0], int(fields[2]), int(fields[4])
    raise BackendError(f"brightnessctl printed no device line: {text.strip()[:200]!r}")


class BrightnessctlBacklight:
    """One backlight device driven through brightnessctl."""

    name = "brightnessctl"

    def __init__(self, *, device: str | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._prefix = [
            "brightnessctl",
            "--class=backlight",
            *([f"--device={device}"] if device else []),
            "--machine-readable",
        ]
        self._timeout = timeout

    def probe(self) -> str | None:
        if shutil.which("brightnessctl") is None:
            return "brightnessctl not found"
        output = probe_command([*self._prefix, "info"])
        if not output.ok:
            return f"brightnessctl found no backlight: {output.reason()}"
        try:
            parse_machine_readable(output.stdout)
        except BackendError as exc:
            return str(exc)
        return None

    async def _run(self, *args: str) -> BrightnessReading:
        output = await run_command([*self._prefix, *args], timeout=self._timeout)
        if not output.ok:
            raise BackendError(f"brightnessctl failed ({output.reason()})")
        device, raw, max_raw = parse_machine_readable(output.stdout)
        if max_raw <= 0:
            raise BackendError(f"brightnessctl reports maximum {max_raw} for {device}")
        return BrightnessReading(
            level=percent_of(raw, max_raw), device=device, backend=self.name, raw=raw, max_raw=max_raw
        )

    async def read(self) -> BrightnessReading:
        return await self._run("info")

    async def write(self, level: int) -> BrightnessReading:
        # `set` prints the device's new state in the same machine-readable form.
        return await self._run("set", f"{level}%")
