"""The interface every python_sandbox backend implements."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from mcp_nexus.sandbox.models import ProbeResult, SandboxRequest, SandboxResult


@runtime_checkable
class SandboxBackend(Protocol):
    """Runs untrusted Python with the data folder readable and nothing else of the host.

    `run` receives a request whose `files` were already validated by the `Sandbox` facade.
    """

    name: str

    async def probe(self) -> ProbeResult:
        """Really run a tiny program to find out whether this backend works here."""
        ...

    async def run(
        self, request: SandboxRequest, *, data_dir: Path, timeout_s: float, output_cap_bytes: int
    ) -> SandboxResult:
        """Run `request.code`; return its capped output. Never leaves a process behind."""
        ...
