"""Refreshing one list of one server: coalesced and spaced, whoever asks.

Three things ask: the server saying the list changed (`list_changed`), the health check (a
server may change its tools without saying so: the list is read again at each check), and
the list's own 2026-07-28 `ttlMs` running out (`ListExpiry`). All go through the one
`ListRefresh` of that list, so they cost one tools/list between them.

A server may send `notifications/tools/list_changed` as often as it likes (an attack run sent
206,550 in 30 s, and the gateway ran 194,285 tools/list refreshes at once). Per server and per
list (tools, resources, prompts) there is at most one refresh running and one waiting: a
notification that arrives while one waits is already covered by it. Refreshes of one list
start at least `limits.list_refresh_interval` seconds apart (the first one at once), so a
flood costs one tools/list, one catalog rebuild and one downstream list_changed per interval.
A refresh that fails is logged and forgotten (its exception is always retrieved).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import mcp_types as types

from mcp_nexus.upstream.session import Session
from mcp_nexus.upstream.session import _collect as collect_pages

logger = logging.getLogger(__name__)


class ListRefresh:
    def __init__(
        self,
        server: str,
        kind: str,
        refresh: Callable[[], Awaitable[None]],
        interval: Callable[[], float],
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[Any]],
        on_heard: Callable[[], None] | None = None,
    ) -> None:
        self.server = server
        self.kind = kind
        self._refresh = refresh
        self._interval = interval
        self._spawn = spawn
        # Told once per refresh that answers the server's own list_changed (not the health check's
        # or an expiry's): other replicas refresh on that (replica_sync.py).
        self._on_heard = on_heard
        self._heard = False
        self._task: asyncio.Task[Any] | None = None
        self._pending = False
        self._last_start: float | None = None
        self._started = False  # the current task's refresh has started (else it still waits)
        self.requested = 0  # list_changed heard
        self.rechecks = 0  # re-lists asked by the health check or an expired ttlMs
        self.runs = 0  # refreshes started

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def waiting(self) -> bool:
        """A refresh is waiting to start: it covers any list_changed that arrives now."""
        return self._pending or (self.busy and not self._started)

    def request(self, *, heard: bool = True) -> None:
        """Refresh the list now, or once the running refresh is over.

        `heard`: the server said the list changed (else the gateway checks on its own).
        """
        if heard:
            self.requested += 1
            self._heard = True
        else:
            self.rechecks += 1
        if self.busy:
            self._pending = True  # the one waiting covers every notification until it starts
            return
        self._started = False
        self._task = self._spawn(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self._last_start is not None:
                wait = self._last_start + self._interval() - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
            self._pending = False
            self._started = True
            self._last_start = loop.time()
            self.runs += 1
            heard, self._heard = self._heard, False
            try:
                if heard and self._on_heard is not None:
                    self._on_heard()
                await self._refresh()
            except Exception as exc:  # the session may be going; its restart lists everything anyway
                logger.info("server %s: refreshing its %s failed: %s", self.server, self.kind, exc)
            if not self._pending:
                return


class ListExpiry:
    """Re-lists when the server's own `ttlMs` on its list runs out (2026-07-28 `CacheableResult`).

    `ttlMs: 0` (the default, "immediately stale") and an absent ttl set no timer: the health
    check re-reads the list anyway, and a timer of 0 would be a loop. A short ttl is raised to
    `floor` seconds so a server cannot make the gateway list without pause.
    """

    def __init__(self, expired: Callable[[], None], floor: Callable[[], float]) -> None:
        self._expired = expired
        self._floor = floor
        self._timer: asyncio.TimerHandle | None = None
        self.fired = 0

    def schedule(self, ttl_ms: int | None) -> None:
        self.cancel()
        if not ttl_ms or ttl_ms <= 0:
            return
        delay = max(ttl_ms / 1000, self._floor(), 0.1)
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self.fired += 1
        self._expired()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


async def list_tools_with_ttl(session: Session) -> tuple[list[types.Tool], int | None]:
    """Every page of the session's tools/list, and the `ttlMs` its first page gave (None: none given)."""
    sdk = session.sdk()
    ttls: list[int | None] = []

    async def page(cursor: str | None) -> types.ListToolsResult:
        answer = await sdk.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        ttls.append(answer.ttl_ms if "ttl_ms" in answer.model_fields_set else None)
        return answer

    tools: list[types.Tool] = await collect_pages(page, "tools")
    return tools, ttls[0] if ttls else None
