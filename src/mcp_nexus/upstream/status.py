"""One server's status as operators and callers see it: its state, why it failed, since when it serves.

Owns the state transitions (each recorded in the history, logged and told through
`on_change`), the redacted `last_error`, the uptime clocks and the wait for readiness.
Separate from the session lifecycle (connection.py) because health checks and the restart
policy decide states too (`mark`), without touching the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.upstream.session import Session
from mcp_nexus.upstream.state import StateHistory, UpstreamState

logger = logging.getLogger(__name__)


class ServerStatus:
    def __init__(
        self,
        *,
        config: Callable[[], ServerConfig],
        session: Callable[[], Session | None],
        on_change: Callable[[], None],
    ) -> None:
        self._config = config  # read at each use: a reload replaces it
        self._session = session  # the current session (None between sessions)
        self._on_change = on_change
        self.state = UpstreamState.STOPPED if config().enabled else UpstreamState.DISABLED
        self.history = StateHistory()
        self.ready_since: float | None = None  # wall-clock time the current session became READY
        self.started_at: float | None = None  # the same on the monotonic clock (for the uptime)
        self._last_error: str | None = None
        self._redactor: tuple[ServerConfig, SecretRedactor] | None = None
        self._ready_event = asyncio.Event()  # set while READY or DEGRADED: callers waiting for a start

    @property
    def last_error(self) -> str | None:
        """Why the server last failed, with every configured secret redacted (it is shown everywhere)."""
        return self._last_error

    @last_error.setter
    def last_error(self, value: str | None) -> None:
        if value:
            config = self._config()
            known = self._redactor
            if known is None or known[0] is not config:  # the config changes on reload
                known = self._redactor = (config, SecretRedactor.for_server(config))
            value = known[1].redact(value)
        self._last_error = value

    @property
    def is_ready(self) -> bool:
        session = self._session()
        return (
            self.state in (UpstreamState.READY, UpstreamState.DEGRADED)
            and session is not None
            and session.open
        )

    @property
    def uptime(self) -> float | None:
        """Seconds since the current session became READY, or None when there is none."""
        return None if self.started_at is None else time.monotonic() - self.started_at

    def set(self, state: UpstreamState, reason: str) -> None:
        """Move to `state` (nothing happens when already there)."""
        if state == self.state:
            return
        previous = self.state
        self.history.record(previous, state, reason)
        self.state = state
        if state == UpstreamState.READY:
            self.ready_since = time.time()
            if self.started_at is None:
                self.started_at = time.monotonic()
        elif state not in (UpstreamState.DEGRADED, UpstreamState.ERROR) or self._session() is None:
            # DEGRADED and a health-check ERROR keep the session (and its uptime); anything else ends it.
            self.ready_since = None
            self.started_at = None
        if self.is_ready:
            self._ready_event.set()
        else:
            self._ready_event.clear()
        log = logger.warning if state in (UpstreamState.ERROR, UpstreamState.CRASHED) else logger.info
        log("server %s: %s -> %s (%s)", self._config().name, previous, state, reason)
        self._on_change()

    def fail(self, reason: str) -> None:
        """ERROR, with `reason` kept as the last error."""
        self.last_error = reason
        self.set(UpstreamState.ERROR, self.last_error or reason)

    def mark(self, state: UpstreamState, reason: str) -> None:
        """Record a state decided outside the session (health checks, the restart policy)."""
        if state == UpstreamState.ERROR:
            self.last_error = reason
        self.set(state, reason)

    async def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for READY (a caller of a server still connecting)."""
        if self.is_ready:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready_event.wait()
        return self.is_ready
