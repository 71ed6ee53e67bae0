"""The task queue the design's agent core submits to: `enqueue / get / cancel / list`, plus what a worker needs.

A queue keeps whole tasks; the worker claims pending ones, the executor saves a task after
every step, and `requeue_running` at start puts back what a stopped gateway left running,
so it resumes at its current step (the design's 断点恢复). sqlite_queue.py is the durable one.
"""

from __future__ import annotations

import builtins
from typing import Protocol

from mcp_nexus.control.task import TaskStatus, UnifiedTask


class TaskNotFoundError(KeyError):
    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id

    def __str__(self) -> str:
        return f"no task with id {self.task_id!r}"


class TaskLeaseLostError(RuntimeError):
    """A shared queue (redis_queue.py) gave this task to another replica: this worker's lease on it
    expired (it stalled, or lost Redis, for longer than `stores.task_lease`). Its state is no longer
    this worker's to save; the other replica goes on with it."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id

    def __str__(self) -> str:
        return f"task {self.task_id!r} was taken over by another replica (this worker's lease expired)"


class TaskQueueUnavailableError(RuntimeError):
    """The queue's store cannot be reached (a shared queue whose Redis is down); says which and why."""


class TaskQueue(Protocol):
    async def enqueue(self, task: UnifiedTask) -> UnifiedTask: ...

    async def get(self, task_id: str) -> UnifiedTask:
        """The task; TaskNotFoundError when there is none."""
        ...

    async def cancel(self, task_id: str) -> UnifiedTask:
        """Pending: cancelled at once. Running: `cancel_requested` (the worker stops it). Finished: unchanged."""
        ...

    async def list(self, status: TaskStatus | None = None, limit: int = 100) -> list[UnifiedTask]:
        """Newest first."""
        ...

    async def save(self, task: UnifiedTask) -> None:
        """Store the task as it is now; never clears a cancel flag set meanwhile."""
        ...

    async def cancel_requested(self, task_id: str) -> bool: ...

    async def claim_next(self) -> UnifiedTask | None:
        """The oldest pending task, now RUNNING (atomically: two workers never claim the same task)."""
        ...

    async def requeue_running(self) -> builtins.list[str]:
        """Put tasks left RUNNING (by a gateway that stopped) back to PENDING; their ids."""
        ...

    async def close(self) -> None: ...
