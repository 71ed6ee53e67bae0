"""Periodic health checks of one upstream: ping (tools/list where ping is unknown), counted failures.

Each check also reads the tool list again (seed 003: `list_tools()` is the heartbeat): a server
that rewrites a tool without sending list_changed is caught by the next check, and the catalog
judges the new definition (catalog/tool_integrity.py). Where ping is unknown the probe's own
tools/list is that read; otherwise the re-list goes through the list's coalesced refresh
(list_refresh.py), shared with list_changed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import Upstream, describe_error

logger = logging.getLogger(__name__)

HEALTH_ERROR_PREFIX = "health check failed"


class HealthChecker:
    """Probes an upstream every `health.interval` seconds while it has a session.

    Failures under `health.threshold` in a row make it DEGRADED (it keeps serving); at the
    threshold it becomes ERROR (its tools leave the catalog) and `on_unhealthy` is called
    (the supervisor reconnects when allowed). A later good probe makes it READY again.
    """

    def __init__(self, upstream: Upstream, on_unhealthy: Callable[[str], None]) -> None:
        self.upstream = upstream
        self._on_unhealthy = on_unhealthy
        self.failures = 0
        self.last_failure: str | None = None
        self.checks = 0
        self._use_ping = True
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running or self.upstream.config.health.interval <= 0:
            return
        self.failures = 0
        self._task = asyncio.create_task(self._loop(), name=f"health-{self.upstream.name}")

    def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _loop(self) -> None:
        while True:
            settings = self.upstream.config.health  # read each round: a reload applies live
            if settings.interval <= 0:
                return
            await asyncio.sleep(settings.interval)
            if not self.upstream.has_session:
                continue  # crashed or restarting: the supervisor handles that, not us
            await self.check_once()

    async def _probe(self, timeout: float) -> None:
        upstream = self.upstream
        capabilities = upstream.capabilities
        if not self._use_ping and capabilities is not None and capabilities.tools is not None:
            async with asyncio.timeout(timeout):  # the probe is the tools/list: its answer is used
                await upstream.refresh_tools(quiet_if_same=True)
            return
        self._use_ping = await upstream.probe(timeout, use_ping=self._use_ping)
        upstream.relist_tools()

    async def check_once(self) -> bool:
        """Probe now and update the state; returns whether the server answered."""
        upstream = self.upstream
        settings = upstream.config.health
        self.checks += 1
        try:
            await self._probe(settings.timeout)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not upstream.has_session:
                return False  # the session ended while we probed: not a health verdict
            self.failures += 1
            why = (
                f"no answer within {settings.timeout:g} s"
                if isinstance(exc, TimeoutError)
                else describe_error(exc)
            )
            self.last_failure = why
            logger.info("server %s: health check %d failed: %s", upstream.name, self.failures, why)
            if self.failures >= settings.threshold:
                reason = f"{HEALTH_ERROR_PREFIX} {self.failures} times in a row: {why}"
                if upstream.state != UpstreamState.ERROR:
                    upstream.mark(UpstreamState.ERROR, reason)
                    self._on_unhealthy(reason)
            elif upstream.state == UpstreamState.READY:
                upstream.mark(
                    UpstreamState.DEGRADED,
                    f"{HEALTH_ERROR_PREFIX} ({self.failures} of {settings.threshold}): {why}",
                )
            return False
        if self.failures or upstream.state in (UpstreamState.DEGRADED, UpstreamState.ERROR):
            logger.info("server %s: health check passed again", upstream.name)
            self.failures = 0
            if upstream.state in (UpstreamState.DEGRADED, UpstreamState.ERROR):
                upstream.last_error = None
                upstream.mark(UpstreamState.READY, "health check passed again")
        return True
