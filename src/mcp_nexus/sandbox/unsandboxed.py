"""The opt-in fallback: a plain child process with rlimits. NOT a sandbox.

It can reach the network and host loopback, read every file the gateway user can, and a
setsid child can escape the kill (REFERENCE.md §6). Only used when the operator opts in;
every result says `sandboxed=False`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from mcp_nexus.sandbox.launch import SYSTEM_PYTHON, bootstrap_argv
from mcp_nexus.sandbox.models import ProbeResult, ResourceLimits, SandboxRequest, SandboxResult
from mcp_nexus.sandbox.process import decode_capped, run_bounded_process


def _absolute(path: Path) -> str:
    """The child runs in a scratch folder, so a relative data folder must be made absolute."""
    return os.path.abspath(path)


class UnsandboxedBackend:
    """Runs the code in a subprocess of the gateway, with rlimits and a fresh working folder."""

    name = "unsandboxed"

    def __init__(self, *, python_path: str | None = None, limits: ResourceLimits | None = None) -> None:
        self._python = python_path or (SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else sys.executable)
        self.limits = limits or ResourceLimits()

    async def probe(self) -> ProbeResult:
        with tempfile.TemporaryDirectory(prefix="nexus-sandbox-probe-") as empty:
            result = await self.run(
                SandboxRequest(code="print(6 * 7)"),
                data_dir=Path(empty),
                timeout_s=10.0,
                output_cap_bytes=1024,
            )
        if result.stdout.strip() == "42":
            return ProbeResult(True, "unsandboxed subprocess works (operator opt-in; NOT isolated)")
        return ProbeResult(
            False, f"{self._python} failed: {result.stderr.strip()[-600:] or result.exit_code}"
        )

    async def run(
        self, request: SandboxRequest, *, data_dir: Path, timeout_s: float, output_cap_bytes: int
    ) -> SandboxResult:
        host_data_dir = _absolute(data_dir)
        with tempfile.TemporaryDirectory(prefix="nexus-unsandboxed-") as scratch:
            argv = bootstrap_argv(
                self._python,
                data_dir=host_data_dir,
                files=list(request.files or []),
                limits=self.limits,
                timeout_s=timeout_s,
                # On the host RLIMIT_NPROC counts all of the gateway user's processes.
                limit_processes=False,
                channel_fd=request.channel_fd,
            )
            env = {"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8"}
            outcome = await run_bounded_process(
                argv,
                stdin_data=request.code.encode("utf-8"),
                timeout_s=timeout_s,
                output_cap_bytes=output_cap_bytes,
                cwd=scratch,
                env=env,
                pass_fds=[] if request.channel_fd is None else [request.channel_fd],
            )
        return SandboxResult(
            stdout=decode_capped(outcome.stdout),
            stderr=decode_capped(outcome.stderr),
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
            truncated=outcome.truncated,
            backend=self.name,
            sandboxed=False,
            duration_s=outcome.duration_s,
        )
