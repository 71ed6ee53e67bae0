"""Which task queue a gateway uses: the local sqlite file, or one queue in Redis shared by the
workers of every replica (`stores: {tasks: redis://...}`, leases of `task_lease` seconds)."""

from __future__ import annotations

from pathlib import Path

from mcp_nexus.control.redis_queue import RedisTaskQueue
from mcp_nexus.control.sqlite_queue import SqliteTaskQueue
from mcp_nexus.control.task_queue import TaskQueue
from mcp_nexus.stores.shared import Stores


def open_task_queue(stores: Stores, path: str | Path) -> TaskQueue:
    link = stores.link("tasks")
    if link is None:
        return SqliteTaskQueue(path)
    queue = RedisTaskQueue(link, prefix=stores.prefix, lease=stores.settings.task_lease)
    stores.add_status(
        "tasks", lambda: {"worker": queue.owner, "running_here": queue.held, "lease_seconds": queue.lease}
    )
    return queue
