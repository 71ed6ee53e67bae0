"""The background tasks that serve one server's current session: list refreshes, the listen stream.

Separate because several parts of an upstream start such tasks (offered_lists.py,
server_changes.py) and one place must end them all when the session goes: a task that
outlives its session only reads a dead connection. It also retrieves every task's failure,
so none is left to asyncio's "exception was never retrieved".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from mcp_nexus.upstream.session import describe_error

logger = logging.getLogger(__name__)


class BackgroundTasks:
    def __init__(self, server: str) -> None:
        self._server = server
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:  # retrieved: never left to asyncio
            logger.info(
                "server %s: background task %s failed: %s", self._server, task.get_name(), describe_error(exc)
            )
