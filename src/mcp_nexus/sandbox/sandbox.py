"""The facade the gateway calls: picks a working backend, validates requests, bounds concurrency."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_nexus.sandbox.backend import SandboxBackend
from mcp_nexus.sandbox.bwrap import NOT_INSTALLED, BwrapBackend
from mcp_nexus.sandbox.errors import SandboxError, SandboxUnavailableError
from mcp_nexus.sandbox.models import ProbeResult, ResourceLimits, SandboxRequest, SandboxResult
from mcp_nexus.sandbox.unsandboxed import UnsandboxedBackend
from mcp_nexus.sandbox.validation import validate_request

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_OUTPUT_CAP_BYTES = 64 * 1024


def default_concurrency() -> int:
    """Runs at once when the operator sets nothing: one per CPU (the code is usually CPU-bound
    data filtering, so more would only slow each run down), and never fewer than 2."""
    return max(2, os.cpu_count() or 1)


UNSANDBOXED_DISABLED = "not allowed (running code without a sandbox needs an explicit operator opt-in)"


@dataclass(frozen=True)
class SandboxStatus:
    """Which backend runs code (None: none works) and each backend's probe outcome."""

    backend: str | None
    sandboxed: bool
    probes: dict[str, ProbeResult]


class Sandbox:
    """Runs python_sandbox requests on the first backend whose probe passes.

    Probes run once (on first use or `status()`), and are cached until `reset()`.
    `allow_unsandboxed` adds the plain-subprocess backend after bubblewrap; it only takes
    effect with the default backend list.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        backends: Sequence[SandboxBackend] | None = None,
        allow_unsandboxed: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        output_cap_bytes: int = DEFAULT_OUTPUT_CAP_BYTES,
        max_concurrent: int | None = None,
        limits: ResourceLimits | None = None,
    ) -> None:
        """`max_concurrent`: runs at once (the `sandbox_concurrency` setting); None: the default.
        A run that finds every slot taken waits for one, and its result says how long.
        `limits`: the kernel limits of the default backends (memory: `sandbox_memory`)."""
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if output_cap_bytes <= 0:
            raise ValueError(f"output_cap_bytes must be positive, got {output_cap_bytes}")
        if max_concurrent is None:
            max_concurrent = default_concurrency()
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent}")
        self.data_dir = Path(data_dir)
        self.allow_unsandboxed = allow_unsandboxed
        self._default_backends = backends is None
        if backends is None:
            backends = [
                BwrapBackend(limits=limits),
                *([UnsandboxedBackend(limits=limits)] if allow_unsandboxed else []),
            ]
        self.limits = limits or ResourceLimits()
        self.backends: list[SandboxBackend] = list(backends)
        self.timeout_s = timeout_s
        self.output_cap_bytes = output_cap_bytes
        self.max_concurrent = max_concurrent
        self._slots = asyncio.Semaphore(max_concurrent)
        self._probe_lock = asyncio.Lock()
        self._probes: dict[str, ProbeResult] | None = None
        self._chosen: SandboxBackend | None = None

    def missing_program(self) -> str | None:
        """Why no sandbox can run when that shows without starting one (bubblewrap is not
        installed), with how to install it; None otherwise. Cheap: the serve banner says it once
        at startup, long before a call probes the backends."""
        for backend in self.backends:
            if isinstance(backend, BwrapBackend) and not backend.installed():
                return NOT_INSTALLED
        return None

    def reset(self) -> None:
        """Forget the cached probe results (e.g. after the operator installed bubblewrap)."""
        self._probes = None
        self._chosen = None

    async def _select(self) -> tuple[SandboxBackend | None, dict[str, ProbeResult]]:
        async with self._probe_lock:
            if self._probes is None:
                probes: dict[str, ProbeResult] = {}
                chosen: SandboxBackend | None = None
                for backend in self.backends:
                    try:
                        result = await backend.probe()
                    except Exception as error:  # a broken backend must not break the others
                        result = ProbeResult(False, f"probe crashed: {type(error).__name__}: {error}")
                    probes[backend.name] = result
                    if result.ok:
                        chosen = backend
                        break
                self._probes, self._chosen = probes, chosen
            return self._chosen, self._probes

    async def status(self) -> SandboxStatus:
        """Probe (once) and report which backend is in use and why the others are not."""
        chosen, probes = await self._select()
        sandboxed = chosen is not None and not isinstance(chosen, UnsandboxedBackend)
        return SandboxStatus(
            backend=chosen.name if chosen else None, sandboxed=sandboxed, probes=dict(probes)
        )

    async def select_backend(self) -> SandboxBackend:
        """The working backend, or SandboxUnavailableError naming why each one failed."""
        chosen, probes = await self._select()
        if chosen is None:
            reasons = {name: probe.reason for name, probe in probes.items()}
            if self._default_backends and not self.allow_unsandboxed:
                reasons[UnsandboxedBackend.name] = UNSANDBOXED_DISABLED
            raise SandboxUnavailableError(reasons)
        return chosen

    async def run(self, request: SandboxRequest, *, timeout_s: float | None = None) -> SandboxResult:
        """Validate `request`, then run it on the selected backend (at most `max_concurrent` at once).

        Raises SandboxInputError for a bad request and SandboxUnavailableError when no
        backend works; the user's own failures come back as a result (exit code, stderr).
        """
        if not self.data_dir.is_dir():
            raise SandboxError(f"the sandbox data folder {self.data_dir} does not exist")
        checked = validate_request(request, self.data_dir)
        backend = await self.select_backend()
        arrived = time.monotonic()
        had_to_wait = self._slots.locked()
        async with self._slots:
            queued_s = time.monotonic() - arrived if had_to_wait else 0.0
            result = await backend.run(
                checked,
                data_dir=self.data_dir,
                timeout_s=timeout_s or self.timeout_s,
                output_cap_bytes=self.output_cap_bytes,
            )
        return dataclasses.replace(result, queued_s=queued_s)
