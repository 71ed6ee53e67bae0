"""The control plane's MCP tools on the gateway: `nexus.run_goal`, `nexus.task_status`, `nexus.cancel_task`,
`nexus.list_tasks`.

`nexus.run_goal` queues the goal and waits for its end up to `wait_seconds` (default
`control.run_goal_wait`, kept under the call's timeout), reporting MCP progress
(`notifications/progress`) for every step when the client sent a progress token. A goal
still running then is answered with its task id and status: poll it with `nexus.task_status`
(docs/CONTROL.md maps this onto the Tasks extension).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Protocol

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.config.control import ControlSettings
from mcp_nexus.control.task import TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskNotFoundError


class TaskOperations(Protocol):
    """What these tools need of the control plane (control_plane.py has them)."""

    settings: ControlSettings

    async def submit(
        self,
        goal: str,
        *,
        mode: str | None = ...,
        context: dict[str, Any] | None = ...,
        owner: str | None = ...,
        profile: str | None = ...,
    ) -> UnifiedTask: ...

    async def get(self, task_id: str) -> UnifiedTask: ...

    async def list(self, status: TaskStatus | None = ..., limit: int = ...) -> list[UnifiedTask]: ...

    async def cancel(self, task_id: str) -> UnifiedTask: ...

    def tool_timeout(self, name: str) -> float | None: ...

    async def wait(
        self, task_id: str, timeout: float, listener: Callable[[UnifiedTask, str], None] | None = ...
    ) -> UnifiedTask: ...


RUN_GOAL = "nexus.run_goal"
TASK_STATUS = "nexus.task_status"
CANCEL_TASK = "nexus.cancel_task"
LIST_TASKS = "nexus.list_tasks"

RESPONSE_MARGIN_S = 2.0
_TASK_ID = {"type": "string", "description": "the id nexus.run_goal answered with"}


def _answer(text: str, structured: dict[str, Any], *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def describe(task: UnifiedTask) -> str:
    """One paragraph a model or a person reads: status, steps, result or error."""
    lines = [f"task {task.id} ({task.mode}-driven): {task.status}"]
    for record in task.history:
        outcome = "ok" if record.ok else f"failed: {record.error}"
        call = (
            f"{record.tool} {json.dumps(record.arguments, ensure_ascii=False)}"
            if record.tool
            else "(no tool)"
        )
        lines.append(f"  step {record.index + 1}: {call} -> {outcome}")
    if task.result:
        lines.append(f"result: {task.result}")
    if task.error:
        lines.append(f"error: {task.error}")
    if not task.status.finished:
        lines.append(
            f"still {task.status}: poll {TASK_STATUS} with task_id {task.id!r}, or cancel it with {CANCEL_TASK}"
        )
    return "\n".join(lines)


def _task_id(arguments: dict[str, Any]) -> str | None:
    value = arguments.get("task_id")
    return value if isinstance(value, str) and value else None


def _user_of(caller: Any) -> str | None:
    """The identity of a caller with an access token (a user), None for the operator's own clients."""
    return caller.identity if getattr(caller, "principal", None) is not None else None


def _check_owner(task: UnifiedTask, caller: Any) -> None:
    """A user's view of another's task is the answer for a task that does not exist."""
    user = _user_of(caller)
    if user is not None and task.owner != user:
        raise TaskNotFoundError(task.id)


def task_tools(control: TaskOperations) -> list[LocalTool]:
    settings = control.settings

    async def run_goal(
        arguments: dict[str, Any], caller: Any, progress: ProgressFnT | None = None
    ) -> types.CallToolResult:
        goal = arguments.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            return _error(
                "nexus.run_goal needs 'goal': what to achieve, e.g. \"record that fastapi uses starlette\""
            )
        mode = arguments.get("mode") or settings.mode
        if mode not in ("plan", "goal"):
            return _error(f"'mode' must be 'plan' or 'goal', got {mode!r}")
        context = arguments.get("context") or {}
        if not isinstance(context, dict):
            return _error(
                f"'context' must be an object (e.g. {{\"environment\": {{...}}}}), got {type(context).__name__}"
            )
        wait = arguments.get("wait_seconds", settings.run_goal_wait)
        if isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0:
            return _error(f"'wait_seconds' must be a number of seconds >= 0, got {wait!r}")
        owner = getattr(caller, "identity", None)
        profile = getattr(caller, "profile", None)
        task = await control.submit(goal.strip(), mode=mode, context=context, owner=owner, profile=profile)
        reported = 0
        pending: set[asyncio.Future[None]] = set()

        def on_event(current: UnifiedTask, message: str) -> None:
            nonlocal reported
            if progress is None:
                return
            reported += 1
            total = float(len(current.plan.steps)) if current.plan is not None else None
            done = float(current.plan.current) if current.plan is not None else float(len(current.history))
            # Progress goes out on its own: a slow client must not hold the task up.
            sent = asyncio.ensure_future(progress(done, total, message))
            pending.add(sent)
            sent.add_done_callback(pending.discard)

        limit = min(float(wait), settings.run_goal_wait)
        timeout = control.tool_timeout(RUN_GOAL)
        if timeout is not None:
            # Answer (with the task id) before the pipeline's timeout would turn the wait into an error.
            limit = min(limit, max(0.0, timeout - RESPONSE_MARGIN_S))
        task = await control.wait(task.id, limit, on_event)
        return _answer(
            describe(task), task.summary(), error=task.status in (TaskStatus.FAILED, TaskStatus.CANCELLED)
        )

    async def run_goal_plain(arguments: dict[str, Any], caller: Any) -> types.CallToolResult:
        return await run_goal(arguments, caller)

    async def task_status(arguments: dict[str, Any], caller: Any) -> types.CallToolResult:
        task_id = _task_id(arguments)
        if task_id is None:
            return _error("nexus.task_status needs 'task_id' (a string)")
        try:
            task = await control.get(task_id)
            _check_owner(task, caller)
        except TaskNotFoundError as exc:
            return _error(str(exc))
        view = task.view(exchanges=bool(arguments.get("details")))
        return _answer(describe(task), view)

    async def cancel_task(arguments: dict[str, Any], caller: Any) -> types.CallToolResult:
        task_id = _task_id(arguments)
        if task_id is None:
            return _error("nexus.cancel_task needs 'task_id' (a string)")
        try:
            _check_owner(await control.get(task_id), caller)
            task = await control.cancel(task_id)
        except TaskNotFoundError as exc:
            return _error(str(exc))
        return _answer(describe(task), task.summary())

    async def list_tasks(arguments: dict[str, Any], caller: Any) -> types.CallToolResult:
        status = arguments.get("status")
        if status is not None and status not in {s.value for s in TaskStatus}:
            return _error(f"'status' must be one of {', '.join(s.value for s in TaskStatus)}, got {status!r}")
        limit = arguments.get("limit", 20)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
            return _error(f"'limit' must be a whole number from 1 to 500, got {limit!r}")
        if _user_of(caller) is None:
            tasks = await control.list(TaskStatus(status) if status else None, limit)
        else:  # a user lists their own tasks only
            every = await control.list(TaskStatus(status) if status else None, 500)
            tasks = [task for task in every if task.owner == caller.identity][:limit]
        rows = [task.summary() for task in tasks]
        text = "\n".join(f"{r['id']} {r['status']:<9} {r['goal']}" for r in rows) or "no tasks"
        return _answer(text, {"tasks": rows})

    read_only = types.ToolAnnotations(read_only_hint=True)
    return [
        LocalTool(
            types.Tool(
                name=RUN_GOAL,
                description=(
                    "Carry out a goal over the gateway's tools: an LLM plans, routes and calls tools step by step "
                    "(each call governed like any other). Answers when done, or after wait_seconds with the task id "
                    f"to poll with {TASK_STATUS}. Reports progress per step."
                ),
                input_schema={
                    "type": "object",
                    "properties": {
                        "goal": {"type": "string", "description": "what to achieve, e.g. 打开客厅的灯"},
                        "mode": {
                            "enum": ["plan", "goal"],
                            "description": "plan-driven (default) or goal-driven",
                        },
                        "context": {
                            "type": "object",
                            "description": 'e.g. {"environment": {"devices": [...]}}',
                        },
                        "wait_seconds": {
                            "type": "number",
                            "minimum": 0,
                            "description": "how long to wait for the end",
                        },
                    },
                    "required": ["goal"],
                },
                # Each call queues a new task: never retried by the pipeline.
                annotations=types.ToolAnnotations(read_only_hint=False, idempotent_hint=False),
            ),
            run_goal_plain,
            progress_handler=run_goal,
        ),
        LocalTool(
            types.Tool(
                name=TASK_STATUS,
                description="Status, steps and result of a task started with nexus.run_goal (details: LLM exchanges too).",
                input_schema={
                    "type": "object",
                    "properties": {"task_id": _TASK_ID, "details": {"type": "boolean"}},
                    "required": ["task_id"],
                },
                annotations=read_only,
            ),
            task_status,
        ),
        LocalTool(
            types.Tool(
                name=CANCEL_TASK,
                description="Cancel a pending or running task (a running step is stopped where it is).",
                input_schema={"type": "object", "properties": {"task_id": _TASK_ID}, "required": ["task_id"]},
            ),
            cancel_task,
        ),
        LocalTool(
            types.Tool(
                name=LIST_TASKS,
                description="The newest tasks with their status (filter by status).",
                input_schema={
                    "type": "object",
                    "properties": {
                        "status": {"enum": [s.value for s in TaskStatus]},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                    },
                },
                annotations=read_only,
            ),
            list_tasks,
        ),
    ]
