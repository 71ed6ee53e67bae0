"""Keeps one upstream alive: restarts (stdio) or reconnects (http, sse) it with backoff, runs its health checks.

The supervisor reacts to the upstream's state changes, so a crash is handled the moment it
is seen, whoever started the server. Operators act through `start`, `stop` and `restart`:
a stopped server stays stopped; a server that keeps failing is given up after
`restart.max_attempts` attempts and left in ERROR with the last error. A server that waits
for an operator's OAuth login (NEEDS_AUTH) is not retried: only the login restarts it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from mcp_nexus.events import ServerStateChanged
from mcp_nexus.upstream.health import HealthChecker
from mcp_nexus.upstream.restart_policy import RestartBudget
from mcp_nexus.upstream.session_types import transport_kind
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)


class Supervisor:
    def __init__(self, upstream: Upstream, *, startup_timeout: float | None = None) -> None:
        self.upstream = upstream
        self.startup_timeout = startup_timeout
        self.budget = RestartBudget(upstream.config.restart)
        self.health = HealthChecker(upstream, self._on_unhealthy)
        self.wanted = False  # the operator (or the config) wants it running
        self.gave_up = False
        self._recovery: asyncio.Task[None] | None = None
        self._operation = asyncio.Lock()  # one start/stop/restart at a time per server
        # Bumped by every stop: a start asked for before a later stop must not run after it
        # (it may be queued behind the lock, or its task not have run yet, when the stop comes).
        self._stops = 0
        self._closed = False  # close() was called: this supervisor never starts its server again
        self._unwatch = upstream.events.subscribe(ServerStateChanged, self._on_state)

    @property
    def name(self) -> str:
        return self.upstream.name

    @property
    def auto_restart(self) -> bool:
        return self.upstream.config.auto_restart

    @property
    def recovering(self) -> bool:
        return self._recovery is not None and not self._recovery.done()

    # -- operator actions ---------------------------------------------------------------

    def start(self) -> Coroutine[Any, Any, None]:
        """Start the server now (a no-op when it runs); on failure the restart policy takes over.

        A stop (or close) that comes after this call wins, even one that comes before the
        returned coroutine first runs (a start in the background) or while it waits for the
        lock: the start then does nothing, so no child is spawned behind a stop that returned.
        """
        return self._start(self._stops)

    async def _start(self, stops: int) -> None:
        self._cancel_recovery()
        async with self._operation:
            if self._closed or self._stops != stops:
                return
            self.wanted = True
            self.gave_up = False
            self.budget.reset()
            if not self.upstream.config.enabled:
                self.upstream.mark(UpstreamState.DISABLED, "disabled in config")
                return
            if self.upstream.state in (UpstreamState.ERROR, UpstreamState.CRASHED, UpstreamState.NEEDS_AUTH):
                await self.upstream.stop(reason="starting again", keep_error=True)
            await self.upstream.start(timeout=self.startup_timeout)
        self._schedule_recovery_if_needed()

    async def stop(self, reason: str = "stopped by operator") -> None:
        """Stop it and keep it stopped (no restart) until `start`; a start in progress is cancelled at once."""
        self.wanted = False
        self._stops += 1
        self._cancel_recovery()
        self.upstream.abort_start()
        async with self._operation:
            self.health.stop()
            await self.upstream.stop(reason=reason)

    async def restart(self, reason: str = "restarted by operator") -> None:
        await self.stop(reason=reason)
        await self.start()

    async def close(self) -> None:
        """Stop for good (the server left the config, or the gateway stops); later starts do nothing."""
        self._closed = True
        self._unwatch()
        await self.stop(reason="gateway stopping")

    def apply_config(self) -> None:
        """The upstream's config object was replaced: take the new restart policy."""
        self.budget.policy = self.upstream.config.restart
        if self.upstream.has_session and not self.health.running:
            self.health.start()
        elif self.upstream.config.health.interval <= 0:
            self.health.stop()

    # -- reactions --------------------------------------------------------------------

    def _on_state(self, event: ServerStateChanged) -> None:
        upstream = event.upstream
        if upstream is not self.upstream:  # the bus is the gateway's: every server's changes pass
            return
        state = upstream.state
        if state == UpstreamState.READY:
            if not self.health.running:
                self.budget.on_ready()
                self.health.start()
            self.gave_up = False
        elif state == UpstreamState.CRASHED:
            self.health.stop()
            self.budget.on_failure()
            self._schedule_recovery_if_needed()
        elif state in (UpstreamState.STOPPED, UpstreamState.DISABLED, UpstreamState.NEEDS_AUTH):
            # NEEDS_AUTH: its session (if still open) is refused until a login; probing it is noise.
            self.health.stop()

    def _on_unhealthy(self, reason: str) -> None:
        # A session that stopped answering is replaced by a fresh one when allowed; otherwise
        # the health checks keep probing it and put it back on its first good answer.
        self.budget.on_failure()
        self._schedule_recovery_if_needed()

    def _schedule_recovery_if_needed(self) -> None:
        upstream = self.upstream
        if not (self.wanted and self.auto_restart and upstream.config.enabled) or self.gave_up:
            return
        if upstream.state not in (UpstreamState.CRASHED, UpstreamState.ERROR) or self.recovering:
            return
        self._recovery = asyncio.create_task(self._recover(), name=f"recover-{self.name}")

    def _cancel_recovery(self) -> None:
        task, self._recovery = self._recovery, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _recover(self) -> None:
        upstream = self.upstream
        verb = "reconnect" if transport_kind(upstream.config.transport) == "network" else "restart"
        while self.wanted:
            if self.budget.exhausted():
                self.gave_up = True
                attempts = self.budget.attempts
                upstream.mark(
                    UpstreamState.ERROR,
                    f"gave up after {attempts} {verb} attempt{'s' if attempts != 1 else ''}: {upstream.last_error}",
                )
                return
            delay = self.budget.next_delay()
            upstream.next_attempt_at = time.monotonic() + delay
            logger.info(
                "server %s: %s attempt %d in %.2f s (%s)",
                self.name,
                verb,
                self.budget.attempts,
                delay,
                upstream.last_error,
            )
            try:
                await asyncio.sleep(delay)
            finally:
                upstream.next_attempt_at = None
            async with self._operation:
                if not self.wanted:
                    return
                self.health.stop()
                await upstream.stop(reason=f"{verb} attempt {self.budget.attempts}", keep_error=True)
                if upstream.state not in (UpstreamState.ERROR, UpstreamState.CRASHED):
                    return  # someone else decided in the meantime
                await upstream.start(
                    timeout=self.startup_timeout, reason=f"{verb} attempt {self.budget.attempts}"
                )
            if upstream.state == UpstreamState.NEEDS_AUTH:
                return  # the server wants a login now: a person, not another attempt, is next
            if upstream.is_ready:
                upstream.restarts += 1
                logger.info("server %s: back after %d %s attempt(s)", self.name, self.budget.attempts, verb)
                return
            self.budget.on_failure()

    def describe(self) -> dict[str, Any]:
        """What the admin API shows about the restart policy and health of this server."""
        return {
            "wanted": self.wanted,
            "auto_restart": self.auto_restart,
            "restart_attempts": self.budget.attempts,
            "recovering": self.recovering,
            "gave_up": self.gave_up,
            "health_failures": self.health.failures,
            "health_checks": self.health.checks,
            "last_health_failure": self.health.last_failure,
        }
