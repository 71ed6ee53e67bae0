"""Admin endpoints of the control plane's tasks; mounted from api.py behind the same guard.

    GET  /api/tasks                 newest tasks first (?status=running&limit=20)
    GET  /api/tasks/{id}            one task: plan, steps, result (?details=1: LLM exchanges too)
    POST /api/tasks                 {"goal": "...", "mode": "plan"|"goal", "context": {...}} -> the queued task
    POST /api/tasks/{id}/cancel     cancel a pending or running task

Without a control plane (neither `llm.base_url` nor `control.enabled` set) every route answers
409 saying how to turn it on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus.control.task import TaskStatus
from mcp_nexus.control.task_queue import TaskNotFoundError, TaskQueueUnavailableError
from mcp_nexus.frontends.admin.json_io import (
    AdminJSONResponse,
    BadBodyError,
    error_response,
    read_json_object,
)
from mcp_nexus.gateway import Gateway

CONTROL_OFF = (
    "the control plane is off: set llm.base_url (an OpenAI-compatible endpoint) or control.enabled: true"
)
STATUSES = [status.value for status in TaskStatus]


Handler = Callable[[Request], Awaitable[AdminJSONResponse]]


def _queue_down_is_503(handler: Handler) -> Handler:
    """A shared queue whose Redis is down (stores.tasks) answers 503 saying so, not a bare 500."""

    async def guarded(request: Request) -> AdminJSONResponse:
        try:
            return await handler(request)
        except TaskQueueUnavailableError as exc:
            return error_response(503, str(exc))

    return guarded


def task_routes(gateway: Gateway) -> list[Route]:
    def control() -> Any:
        return gateway.control

    async def list_tasks(request: Request) -> AdminJSONResponse:
        if control() is None:
            return error_response(409, CONTROL_OFF)
        status = request.query_params.get("status")
        if status is not None and status not in STATUSES:
            return error_response(400, f"'status' must be one of {', '.join(STATUSES)}, got {status!r}")
        raw_limit = request.query_params.get("limit", "100")
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= 1000:
            return error_response(400, f"'limit' must be a whole number from 1 to 1000, got {raw_limit!r}")
        tasks = await control().list(TaskStatus(status) if status else None, int(raw_limit))
        return AdminJSONResponse({"tasks": [task.summary() for task in tasks]})

    async def one_task(request: Request) -> AdminJSONResponse:
        if control() is None:
            return error_response(409, CONTROL_OFF)
        try:
            task = await control().get(request.path_params["id"])
        except TaskNotFoundError as exc:
            return error_response(404, str(exc))
        details = request.query_params.get("details", "") in ("1", "true", "yes")
        return AdminJSONResponse(task.view(exchanges=details))

    async def create(request: Request) -> AdminJSONResponse:
        if control() is None:
            return error_response(409, CONTROL_OFF)
        try:
            body = await read_json_object(request, '{"goal": "turn on the living-room light"}')
        except BadBodyError as exc:
            return exc.response()
        goal = body.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            return error_response(400, "'goal' must be a non-empty string: what to achieve", path="$.goal")
        mode = body.get("mode")
        if mode is not None and mode not in ("plan", "goal"):
            return error_response(400, f"'mode' must be 'plan' or 'goal', got {mode!r}", path="$.mode")
        context = body.get("context", {})
        if not isinstance(context, dict):
            return error_response(
                400, f"'context' must be a JSON object, got {type(context).__name__}", path="$.context"
            )
        task = await control().submit(goal.strip(), mode=mode, context=context, owner="api:-")
        return AdminJSONResponse(task.summary())

    async def cancel(request: Request) -> AdminJSONResponse:
        if control() is None:
            return error_response(409, CONTROL_OFF)
        try:
            task = await control().cancel(request.path_params["id"])
        except TaskNotFoundError as exc:
            return error_response(404, str(exc))
        return AdminJSONResponse(task.summary())

    return [
        Route("/api/tasks", _queue_down_is_503(list_tasks), methods=["GET"]),
        Route("/api/tasks", _queue_down_is_503(create), methods=["POST"]),
        Route("/api/tasks/{id}", _queue_down_is_503(one_task), methods=["GET"]),
        Route("/api/tasks/{id}/cancel", _queue_down_is_503(cancel), methods=["POST"]),
    ]


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def task_openapi_paths(guarded: Any) -> dict[str, Any]:
    """The routes above for the admin API's OpenAPI document (`guarded` adds the guard's answers)."""
    error = {"$ref": "#/components/schemas/Error"}
    task = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "goal": {"type": "string"},
            "mode": {"enum": ["plan", "goal"]},
            "status": {"enum": STATUSES},
            "steps": {"type": "integer"},
            "result": {"type": ["string", "null"]},
            "error": {"type": ["string", "null"]},
        },
        "required": ["id", "goal", "status"],
    }
    task_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    off = _json(error, "The control plane is off (no llm.base_url, control.enabled false)")
    missing = _json(error, "No such task")
    return {
        "/api/tasks": {
            "get": {
                "summary": "Tasks of the control plane, newest first",
                "parameters": [
                    {"name": "status", "in": "query", "required": False, "schema": {"enum": STATUSES}},
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                    },
                ],
                "responses": guarded(
                    {
                        "200": _json(
                            {"type": "object", "properties": {"tasks": {"type": "array", "items": task}}}
                        ),
                        "409": off,
                    }
                ),
            },
            "post": {
                "summary": "Queue a goal for the executor",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "goal": {"type": "string", "minLength": 1},
                                    "mode": {"enum": ["plan", "goal"]},
                                    "context": {"type": "object"},
                                },
                                "required": ["goal"],
                            }
                        }
                    },
                },
                "responses": guarded({"200": _json(task, "The queued task"), "409": off}),
            },
        },
        "/api/tasks/{id}": {
            "get": {
                "summary": "One task: plan, steps, result",
                "parameters": [
                    task_id,
                    {"name": "details", "in": "query", "required": False, "schema": {"type": "string"}},
                ],
                "responses": guarded({"200": _json({"type": "object"}), "404": missing, "409": off}),
            }
        },
        "/api/tasks/{id}/cancel": {
            "post": {
                "summary": "Cancel a pending or running task",
                "parameters": [task_id],
                "responses": guarded({"200": _json(task), "404": missing, "409": off}),
            }
        },
    }
