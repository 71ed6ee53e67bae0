"""Unified tasks as MCP Tasks data (the shape the Tasks extension's tasks/get answers)."""

from __future__ import annotations

import mcp_types as types

from mcp_nexus.control.task import ExecutionData, PlanStep, TaskPlan, TaskStatus, UnifiedTask
from mcp_nexus.control.tasks_extension import as_mcp_task, task_handle


def test_running_and_finished_tasks_map_onto_task_statuses() -> None:
    task = UnifiedTask(execution_data=ExecutionData(goal="打开客厅的灯"), created_at=0.0, updated_at=1.5)
    task.status = TaskStatus.RUNNING
    task.plan = TaskPlan(
        steps=[PlanStep(index=0, description="a"), PlanStep(index=1, description="b")], current=1
    )
    running = as_mcp_task(task)
    assert (running.status, running.status_message, running.poll_interval) == ("working", "step 2 of 2", 1000)
    assert (
        running.created_at == "1970-01-01T00:00:00Z"
        and running.last_updated_at == "1970-01-01T00:00:01.500000Z"
    )
    task.status, task.result = TaskStatus.SUCCEEDED, "the light is on"
    handle = task_handle(task)
    assert handle["resultType"] == "task"
    assert handle["task"]["taskId"] == task.id and handle["task"]["status"] == "completed"
    assert types.Task.model_validate(handle["task"]).status_message == "the light is on"
