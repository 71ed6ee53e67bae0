"""Run the helper programs (pactl, amixer, osascript, brightnessctl) with a timeout.

Two flavours: `run_command` for tool calls (asyncio, never blocks the event loop) and
`probe_command` for start-up detection (blocking, because `create_server` is a plain
function the gateway calls while it builds its configuration).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcp_nexus.builtin.device.errors import BackendError

DEFAULT_TIMEOUT_SECONDS = 5.0
PROBE_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """What a finished helper program printed and how it exited."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def reason(self) -> str:
        """The most useful single line for an error message."""
        text = (self.stderr.strip() or self.stdout.strip() or f"exit status {self.returncode}").splitlines()
        return text[-1].strip()


def command_env(extra: Mapping[str, str] | None) -> dict[str, str] | None:
    """The environment for a helper: ours plus `extra` (None means inherit unchanged)."""
    if not extra:
        return None
    return {**os.environ, **extra}


async def run_command(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    env: Mapping[str, str] | None = None,
) -> CommandOutput:
    """Run `argv` and collect its output; raises BackendError when it cannot start or hangs."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=command_env(env),
        )
    except FileNotFoundError as exc:
        raise BackendError(f"{argv[0]} is no longer installed on this host") from exc
    except PermissionError as exc:
        raise BackendError(f"{argv[0]} cannot be executed: permission denied") from exc
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError) as exc:
        # Never leave the helper behind, whether we timed out or our caller gave up.
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise BackendError(f"{argv[0]} did not answer within {timeout:g} s") from exc
    return CommandOutput(
        returncode=process.returncode if process.returncode is not None else -1,
        stdout=stdout.decode(errors="replace"),
        stderr=stderr.decode(errors="replace"),
    )


def probe_command(
    argv: Sequence[str],
    *,
    timeout: float = PROBE_TIMEOUT_SECONDS,
    env: Mapping[str, str] | None = None,
) -> CommandOutput:
    """Blocking variant for start-up detection; a program that cannot run yields a failed output."""
    try:
        completed = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env=command_env(env),
            check=False,
        )
    except FileNotFoundError:
        return CommandOutput(127, "", f"{argv[0]}: not found")
    except PermissionError:
        return CommandOutput(126, "", f"{argv[0]}: permission denied")
    except subprocess.TimeoutExpired:
        return CommandOutput(124, "", f"{argv[0]} did not answer within {timeout:g} s")
    return CommandOutput(
        completed.returncode,
        completed.stdout.decode(errors="replace"),
        completed.stderr.decode(errors="replace"),
    )
