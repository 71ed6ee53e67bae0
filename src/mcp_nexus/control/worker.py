"""`TaskWorker`: takes pending tasks from the queue and runs them with the executor, a few at a time.

At start it puts back what a stopped gateway left RUNNING, so those tasks resume at their
current step. Stopping leaves running tasks PENDING again (they resume at the next start);
cancelling one (`cancel`) stops its step where it is and records it CANCELLED.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from mcp_nexus.control.executor import McpExecutor
from mcp_nexus.control.task import TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskLeaseLostError, TaskQueue, TaskQueueUnavailableError

logger = logging.getLogger(__name__)

POLL_INTERVAL = 1.0
"""Seconds between looks at the queue when nothing woke the worker (tasks enqueued by another process)."""


class TaskWorker:
    def __init__(
        self,
        queue: TaskQueue,
        executor: McpExecutor,
        *,
        concurrency: int = 1,
        wake: asyncio.Event | None = None,
    ) -> None:
        self.queue = queue
        self.executor = executor
        self.concurrency = concurrency
        self.wake = wake or asyncio.Event()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._stopping = False
        self.resumed: list[str] = []

    async def start(self) -> None:
        self.resumed = await self.queue.requeue_running()
        if self.resumed:
            logger.info("resuming %d task(s) left running: %s", len(self.resumed), ", ".join(self.resumed))
        self._loop_task = asyncio.create_task(self._loop(), name="control-worker")

    async def stop(self) -> None:
        self._stopping = True
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(BaseException):
                await self._loop_task
        for running in list(self._running.values()):
            running.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)

    def is_running(self, task_id: str) -> bool:
        return task_id in self._running

    def cancel(self, task_id: str) -> bool:
        """Stop a task this worker runs; False when it runs nowhere here."""
        running = self._running.get(task_id)
        if running is None or running.done():
            return False
        running.cancel()
        return True

    async def _loop(self) -> None:
        while True:
            if len(self._running) >= self.concurrency:
                await asyncio.wait(set(self._running.values()), return_when=asyncio.FIRST_COMPLETED)
                continue
            self.wake.clear()
            try:
                task = await self.queue.claim_next()
            except Exception:  # a locked or broken database: log, wait, try again
                logger.exception("cannot read the task queue")
                task = None
            if task is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), POLL_INTERVAL)
                continue
            runner = asyncio.create_task(self._execute(task), name=f"task-{task.id}")
            self._running[task.id] = runner
            runner.add_done_callback(self._forget(task.id))

    def _forget(self, task_id: str) -> Callable[[asyncio.Task[None]], None]:
        def forget(_done: asyncio.Task[None]) -> None:
            self._running.pop(task_id, None)

        return forget

    async def _execute(self, task: UnifiedTask) -> None:
        try:
            await self.executor.execute(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._stopping:
                # Not the task's end: it resumes at its current step when the gateway starts again.
                task.status = TaskStatus.PENDING
                task.resumed += 1
                if task.history and not task.history[-1].ok and task.history[-1].error is None:
                    task.history[
                        -1
                    ].error = "interrupted: the gateway stopped during this step (it runs again)"
                if task.plan is not None and task.plan.current_step is not None:
                    task.plan.current_step.status = "pending"
                with contextlib.suppress(BaseException):
                    await asyncio.shield(self.queue.save(task))
                raise
            if current is not None:
                current.uncancel()
            task.status, task.error, task.finished_at = (
                TaskStatus.CANCELLED,
                "cancelled while running",
                time.time(),
            )
            if task.history and not task.history[-1].ok and task.history[-1].error is None:
                task.history[-1].error = "cancelled during this step"
            await self.queue.save(task)
            await self.executor.emit(task, "cancelled")
        except TaskLeaseLostError as exc:  # a shared queue gave it to another replica: theirs now
            logger.warning("task %s: %s; stopped here", task.id, exc)
        except TaskQueueUnavailableError as exc:  # cannot save it: taken again once the queue is back
            logger.warning("task %s: stopped, its progress cannot be saved: %s", task.id, exc)
        except Exception as exc:  # a bug must end the task clearly, not the worker
            logger.exception("task %s failed unexpectedly", task.id)
            task.status, task.error, task.finished_at = (
                TaskStatus.FAILED,
                f"internal error: {type(exc).__name__}: {exc}",
                time.time(),
            )
            await self.queue.save(task)
            await self.executor.emit(task, f"failed: {task.error}")
