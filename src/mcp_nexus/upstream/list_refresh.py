"""Refreshing one list of one server after it said the list changed: coalesced and spaced.

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

logger = logging.getLogger(__name__)


class ListRefresh:
    def __init__(
        self,
        server: str,
        kind: str,
        refresh: Callable[[], Awaitable[None]],
        interval: Callable[[], float],
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[Any]],
    ) -> None:
        self.server = server
        self.kind = kind
        self._refresh = refresh
        self._interval = interval
        self._spawn = spawn
        self._task: asyncio.Task[Any] | None = None
        self._pending = False
        self._last_start: float | None = None
        self._started = False  # the current task's refresh has started (else it still waits)
        self.requested = 0  # list_changed heard
        self.runs = 0  # refreshes started

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def waiting(self) -> bool:
        """A refresh is waiting to start: it covers any list_changed that arrives now."""
        return self._pending or (self.busy and not self._started)

    def request(self) -> None:
        """The server said this list changed: refresh it now, or once the running refresh is over."""
        self.requested += 1
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
            try:
                await self._refresh()
            except Exception as exc:  # the session may be going; its restart lists everything anyway
                logger.info(
                    "server %s: refreshing its %s after list_changed failed: %s", self.server, self.kind, exc
                )
            if not self._pending:
                return
