"""The durable task queue: sqlite in a file, read back by a new queue (a restarted gateway)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_nexus.control.sqlite_queue import SqliteTaskQueue
from mcp_nexus.control.task import ExecutionData, PlanStep, TaskPlan, TaskStatus, TaskType, UnifiedTask
from mcp_nexus.control.task_queue import TaskNotFoundError

pytestmark = pytest.mark.timeout(30)


def new_task(goal: str = "打开客厅的灯") -> UnifiedTask:
    # The design's own example (6.2): an MCP_CALL task with goal and user intent.
    return UnifiedTask(
        task_type=TaskType.MCP_CALL, execution_data=ExecutionData(goal=goal, user_intent=goal), context={}
    )


async def test_enqueue_get_list_and_persistence(tmp_path: Path) -> None:
    queue = SqliteTaskQueue(tmp_path / "q.sqlite")
    first, second = await queue.enqueue(new_task("a")), await queue.enqueue(new_task("b"))
    claimed = await queue.claim_next()
    assert claimed is not None and claimed.id == first.id and claimed.status is TaskStatus.RUNNING
    claimed.plan = TaskPlan(
        steps=[PlanStep(index=0, description="x", status="done"), PlanStep(index=1, description="y")],
        current=1,
    )
    await queue.save(claimed)
    await queue.close()

    reopened = SqliteTaskQueue(tmp_path / "q.sqlite")  # what a restarted gateway sees
    assert [t.id for t in await reopened.list()] == [second.id, first.id]
    assert await reopened.requeue_running() == [first.id]
    resumed = await reopened.claim_next()
    assert resumed is not None and resumed.id == first.id and resumed.resumed == 1
    assert resumed.plan is not None and resumed.plan.current == 1  # resumes at its current step
    assert [t.status for t in await reopened.list(TaskStatus.PENDING)] == [TaskStatus.PENDING]
    with pytest.raises(TaskNotFoundError, match="no task with id 'missing'"):
        await reopened.get("missing")
    await reopened.close()


async def test_cancel_flag_survives_a_save_of_an_older_copy(tmp_path: Path) -> None:
    queue = SqliteTaskQueue(tmp_path / "q.sqlite")
    await queue.enqueue(new_task())
    running = await queue.claim_next()
    assert running is not None
    flagged = await queue.cancel(running.id)
    assert flagged.cancel_requested and flagged.status is TaskStatus.RUNNING
    await queue.save(running)  # the executor's copy, read before the cancel
    assert await queue.cancel_requested(running.id)
    pending = await queue.enqueue(new_task("later"))
    cancelled = await queue.cancel(pending.id)
    assert cancelled.status is TaskStatus.CANCELLED and await queue.claim_next() is None
    await queue.close()
