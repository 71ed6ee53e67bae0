"""Fan-out of live events (server states, calls) to the dashboard's server-sent-event streams.

Each open stream has a bounded queue; a viewer too slow to keep up loses events and is
told to reload its state (a "resync" event), so a stalled browser never holds memory or
slows a call down. With no viewer, publishing is a loop over an empty set.
"""

from __future__ import annotations

import asyncio
from typing import Any

QUEUE_SIZE = 512

Event = tuple[str, Any]  # (event name, JSON-ready data)


class EventHub:
    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[Event | None]] = set()
        self._behind: set[asyncio.Queue[Event | None]] = set()

    @property
    def viewers(self) -> int:
        return len(self._queues)

    def open(self) -> asyncio.Queue[Event | None]:
        queue: asyncio.Queue[Event | None] = asyncio.Queue(QUEUE_SIZE)
        self._queues.add(queue)
        return queue

    def close(self, queue: asyncio.Queue[Event | None]) -> None:
        self._queues.discard(queue)
        self._behind.discard(queue)

    def publish(self, event: str, data: Any) -> None:
        for queue in self._queues:
            if queue in self._behind:
                continue
            try:
                queue.put_nowait((event, data))
            except asyncio.QueueFull:
                self._behind.add(queue)

    def caught_up(self, queue: asyncio.Queue[Event | None]) -> bool:
        """True once after a queue overflowed and drained: the viewer should reload everything."""
        if queue in self._behind and queue.empty():
            self._behind.discard(queue)
            return True
        return False

    def shutdown(self) -> None:
        """End every stream (the app is stopping)."""
        for queue in self._queues:
            try:
                queue.put_nowait(None)
            except asyncio.QueueFull:
                queue.get_nowait()
                queue.put_nowait(None)
