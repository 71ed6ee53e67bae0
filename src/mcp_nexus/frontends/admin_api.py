"""The admin JSON API under `/api`, on the same port as `/mcp` and behind the same guard (token, Host, Origin).

    GET  /api/servers                         every server: state, history, tools, last error, uptime
    GET  /api/servers/{name}                  one server
    POST /api/servers/{name}/{action}         action: start | stop | restart | enable | disable
    GET  /api/tools                           the aggregated tools, with their server and fallbacks
    POST /api/tools/{name}/call               {"arguments": {...}} -> the result, through the pipeline
    POST /api/reload                          re-read the config file and apply the diff
    GET  /api/openapi.json                    this API as an OpenAPI 3.1 document
(the cache routes, POST /api/cache/clear and GET /api/cache, come from admin_cache.py)
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_nexus import __version__
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.gateway import Gateway, UnknownServerError
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.errors import GatewayError
from mcp_nexus.upstream.supervisor import Supervisor

SERVER_ACTIONS = ("start", "stop", "restart", "enable", "disable")


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def server_status(supervisor: Supervisor, *, history: bool = True) -> dict[str, Any]:
    """What an operator wants to know about one server (also used by `nexus servers` in local mode)."""
    upstream = supervisor.upstream
    config = upstream.config
    status: dict[str, Any] = {
        "name": upstream.name,
        "display_name": config.display_name,
        "transport": config.transport,
        "state": str(upstream.state),
        "enabled": config.enabled,
        "priority": config.effective_priority,
        "namespace": config.effective_namespace,
        "tools": len(upstream.tools),
        "protocol": upstream.protocol_version,
        "last_error": upstream.last_error,
        "uptime": None if upstream.uptime is None else round(upstream.uptime, 3),
        "pid": upstream.pid,
        "restarts": max(0, upstream.sessions_opened - 1),
        **supervisor.describe(),
    }
    if history:
        status["history"] = [
            {
                "timestamp": change.timestamp,
                "from": str(change.from_state),
                "to": str(change.to_state),
                "reason": change.reason,
            }
            for change in upstream.history
        ]
    return status


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"the body must be a JSON object: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


def frontend_status(gateway: Gateway) -> dict[str, Any]:
    """Links that frontends keep open themselves (e.g. Xiaozhi endpoints), by frontend name."""
    return {name: provider() for name, provider in gateway.status_providers.items()}


def admin_routes(gateway: Gateway) -> list[Route]:
    async def list_servers(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "servers": [server_status(s) for s in gateway.supervisors.values()],
                "frontends": frontend_status(gateway),
                "tools": len(gateway.catalog.tool_list),
                "in_flight": gateway.in_flight,
                "started_at": gateway.started_at,
                "uptime": round(time.time() - gateway.started_at, 3),
                "version": __version__,
            }
        )

    async def list_frontends(request: Request) -> JSONResponse:
        return JSONResponse({"frontends": frontend_status(gateway)})

    async def one_server(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        supervisor = gateway.supervisors.get(name)
        if supervisor is None:
            return _error(404, f"no server named {name!r}", servers=sorted(gateway.supervisors))
        return JSONResponse(server_status(supervisor))

    async def server_action(request: Request) -> JSONResponse:
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in SERVER_ACTIONS:
            return _error(404, f"unknown action {action!r}; expected one of {', '.join(SERVER_ACTIONS)}")
        operation = {
            "start": gateway.start_server,
            "stop": gateway.stop_server,
            "restart": gateway.restart_server,
            "enable": gateway.enable_server,
            "disable": gateway.disable_server,
        }[action]
        try:
            await operation(name)
        except UnknownServerError as exc:
            return _error(404, str(exc), servers=sorted(gateway.supervisors))
        return JSONResponse(server_status(gateway.supervisors[name], history=False))

    async def list_tools(request: Request) -> JSONResponse:
        rows = []
        for name, entry in gateway.catalog.tools.items():
            candidates = [route.upstream.name for route in entry.candidates]
            rows.append(
                {
                    "name": name,
                    "server": candidates[0] if candidates else "nexus",
                    "fallbacks": candidates[1:],
                    "description": entry.tool.description or "",
                    "input_schema": entry.tool.input_schema,
                }
            )
        return JSONResponse({"tools": rows})

    async def call_tool(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        try:
            body = await _json_body(request)
        except ValueError as exc:
            return _error(400, str(exc))
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            return _error(400, f"'arguments' must be a JSON object, got {type(arguments).__name__}")
        try:
            result = await gateway.call_tool_result(name, arguments, caller=Caller("api"))
        except GatewayError as exc:
            status = 404 if name not in gateway.catalog.tools else 502
            return _error(status, exc.message, code=exc.code, data=exc.data)
        return JSONResponse(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def reload(request: Request) -> JSONResponse:
        source = gateway.config_source
        if source is None:
            return _error(409, "this gateway was started without a config file: nothing to reload")
        try:
            report = await source.reload(gateway)
        except ConfigError as exc:
            return _error(
                422,
                f"the config file was rejected; the running config stays in force: {exc}",
                problems=[str(p) for p in exc.problems],
            )
        return JSONResponse({"summary": report.summary(), **vars(report)})

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(openapi_document())

    return [
        Route("/api/servers", list_servers, methods=["GET"]),
        Route("/api/frontends", list_frontends, methods=["GET"]),
        Route("/api/servers/{name}", one_server, methods=["GET"]),
        Route("/api/servers/{name}/{action}", server_action, methods=["POST"]),
        Route("/api/tools", list_tools, methods=["GET"]),
        Route("/api/tools/{name:path}/call", call_tool, methods=["POST"]),
        Route("/api/reload", reload, methods=["POST"]),
        Route("/api/openapi.json", openapi, methods=["GET"]),
    ]


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERROR = {"$ref": "#/components/schemas/Error"}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}


def openapi_document() -> dict[str, Any]:
    """The admin API described as OpenAPI 3.1 (kept next to the routes so both change together)."""
    server = {"$ref": "#/components/schemas/Server"}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Nexus admin API",
            "version": __version__,
            "description": "Runtime control of a Nexus gateway. Send `Authorization: Bearer <token>` "
            "when the gateway has a token.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {"error": {"type": "string"}},
                    "required": ["error"],
                },
                "StateChange": {
                    "type": "object",
                    "properties": {
                        "timestamp": {"type": "number"},
                        "from": {"type": "string"},
                        "to": {"type": "string"},
                        "reason": {"type": "string"},
                    },
                },
                "Server": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "display_name": {"type": ["string", "null"], "description": "e.g. the Lumi `name`"},
                        "transport": {"enum": ["stdio", "http", "sse", "embedded"]},
                        "state": {
                            "enum": [
                                "DISABLED",
                                "STOPPED",
                                "CONNECTING",
                                "READY",
                                "DEGRADED",
                                "ERROR",
                                "CRASHED",
                            ]
                        },
                        "enabled": {"type": "boolean"},
                        "priority": {"type": "integer"},
                        "namespace": {"type": "string"},
                        "tools": {"type": "integer"},
                        "protocol": {"type": ["string", "null"]},
                        "last_error": {"type": ["string", "null"]},
                        "uptime": {"type": ["number", "null"], "description": "seconds READY"},
                        "pid": {"type": ["integer", "null"]},
                        "restarts": {"type": "integer"},
                        "restart_attempts": {"type": "integer"},
                        "gave_up": {"type": "boolean"},
                        "health_failures": {"type": "integer"},
                        "history": {"type": "array", "items": {"$ref": "#/components/schemas/StateChange"}},
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/servers": {
                "get": {
                    "summary": "List servers with state, history, tool count, last error and uptime",
                    "responses": {
                        "200": _json(
                            {"type": "object", "properties": {"servers": {"type": "array", "items": server}}}
                        )
                    },
                }
            },
            "/api/frontends": {
                "get": {
                    "summary": "Links frontends keep open themselves (Xiaozhi endpoints, device envelopes)",
                    "responses": {
                        "200": _json({"type": "object", "properties": {"frontends": {"type": "object"}}})
                    },
                }
            },
            "/api/servers/{name}": {
                "get": {
                    "summary": "One server",
                    "parameters": [_NAME],
                    "responses": {"200": _json(server), "404": _json(_ERROR, "No such server")},
                }
            },
            **{
                f"/api/servers/{{name}}/{action}": {
                    "post": {
                        "summary": f"{action.capitalize()} one server (the others are not touched)",
                        "parameters": [_NAME],
                        "responses": {"200": _json(server), "404": _json(_ERROR, "No such server")},
                    }
                }
                for action in SERVER_ACTIONS
            },
            "/api/tools": {
                "get": {
                    "summary": "The aggregated tools with their server and fallbacks",
                    "responses": {"200": _json({"type": "object"})},
                }
            },
            "/api/tools/{name}/call": {
                "post": {
                    "summary": "Call a tool through the pipeline (cache, limits, offload, fallback)",
                    "parameters": [_NAME],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": {"arguments": {"type": "object"}}}
                            }
                        }
                    },
                    "responses": {
                        "200": _json(
                            {"type": "object"}, "The CallToolResult (isError for tool-level errors)"
                        ),
                        "400": _json(_ERROR, "Bad body"),
                        "404": _json(_ERROR, "Unknown tool"),
                        "502": _json(_ERROR, "No server could answer"),
                    },
                }
            },
            "/api/reload": {
                "post": {
                    "summary": "Re-read the config file and apply the difference",
                    "responses": {
                        "200": _json({"type": "object"}, "What changed"),
                        "409": _json(_ERROR, "Started without a config file"),
                        "422": _json(_ERROR, "The file was rejected; the running config stays"),
                    },
                }
            },
            "/api/cache/clear": {
                "post": {
                    "summary": "Drop cached results (of one tool, or all)",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": {"tool": {"type": "string"}}}
                            }
                        }
                    },
                    "responses": {"200": _json({"type": "object"})},
                }
            },
            "/api/cache": {
                "get": {"summary": "Cache statistics", "responses": {"200": _json({"type": "object"})}}
            },
            "/api/openapi.json": {
                "get": {"summary": "This document", "responses": {"200": _json({"type": "object"})}}
            },
        },
    }
