"""A unified task as the MCP Tasks data (`Task`: taskId, status, statusMessage, createdAt, lastUpdatedAt,
ttl, pollInterval), ready for the Tasks extension (SEP-2663: `tasks/get|update|cancel`, `resultType:
"task"`) once the SDK dispatches it; today the SDK has the types only. docs/CONTROL.md has the design note.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import mcp_types as types

from mcp_nexus.control.task import TaskStatus, UnifiedTask

TASK_RESULT_TYPE = "task"
"""The `resultType` the extension reserves for a result that is a task handle."""
POLL_INTERVAL_MS = 1000

STATUS: dict[TaskStatus, str] = {
    TaskStatus.PENDING: "working",  # queued counts as working: the requestor only polls either way
    TaskStatus.RUNNING: "working",
    TaskStatus.SUCCEEDED: "completed",
    TaskStatus.FAILED: "failed",
    TaskStatus.CANCELLED: "cancelled",
}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def status_message(task: UnifiedTask) -> str:
    if task.status.finished:
        return (task.result or task.error or str(task.status))[:500]
    plan = task.plan
    if plan is not None:
        return f"step {min(plan.current + 1, len(plan.steps))} of {len(plan.steps)}"
    return f"{len(task.history)} step(s) done" if task.history else str(task.status)


def as_mcp_task(task: UnifiedTask, *, ttl_ms: int | None = None) -> types.Task:
    return types.Task(
        task_id=task.id,
        status=STATUS[task.status],  # type: ignore[arg-type]
        status_message=status_message(task),
        created_at=_iso(task.created_at),
        last_updated_at=_iso(task.updated_at),
        ttl=ttl_ms,
        poll_interval=None if task.status.finished else POLL_INTERVAL_MS,
    )


def task_handle(task: UnifiedTask) -> dict[str, Any]:
    """What a `tools/call` answered with `resultType: "task"` would carry (wire spelling)."""
    return {
        "resultType": TASK_RESULT_TYPE,
        "task": as_mcp_task(task).model_dump(mode="json", by_alias=True),  # ttl: null is required
    }
