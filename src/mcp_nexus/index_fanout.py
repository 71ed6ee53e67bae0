"""A new tool-index snapshot between replicas: one replica syncs, the others serve it at once.

With `stores.index` in Redis every replica saves to and loads from the same snapshot, but a
running replica would otherwise look at it only when its own snapshot expires. After each
successful save the saving replica publishes `{"type": "index_saved", "last_sync": ...}` on the
events bus; every other replica then adopts the saved snapshot if it is newer than its own and
still fresh (`IndexSync.adopt_newer`), without asking the servers. With a local index file
(stores.index: memory) nothing is published: no other replica reads that file.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mcp_nexus.catalog.index_sync import IndexSync
from mcp_nexus.stores.events import EventBus

logger = logging.getLogger(__name__)

EVENT_TYPE = "index_saved"


class IndexSavedFanout:
    def __init__(self, bus: EventBus, index_sync: IndexSync) -> None:
        self.bus = bus
        self.index_sync = index_sync
        self.published = 0
        self.adopted = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        index_sync.saved_listeners.append(self.saved)
        bus.subscribe(self.on_event)

    def saved(self, last_sync: str | None) -> None:
        """IndexSync's listener: this replica saved a snapshot."""
        self.published += 1
        self._spawn(self.bus.publish({"type": EVENT_TYPE, "last_sync": last_sync}))

    def on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == EVENT_TYPE:
            self._spawn(self._adopt())

    async def _adopt(self) -> None:
        try:
            if await self.index_sync.adopt_newer():
                self.adopted += 1
        except Exception:  # a failed look at the store must not break the events bus
            logger.exception("tool index: adopting another replica's snapshot failed")

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
