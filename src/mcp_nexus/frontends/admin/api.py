"""The admin JSON API under `/api`, on the same port as `/mcp` and behind the same guard (token, Host, Origin).

    GET  /api/servers                         every server: state, history, tools, last error, uptime
    GET  /api/servers/{name}                  one server
    POST /api/servers/{name}/{action}         action: start | stop | restart | enable | disable
    GET  /api/tools                           the aggregated tools, with their server and fallbacks
    POST /api/tools/{name}/call               {"arguments": {...}} -> the result, through the pipeline
    POST /api/reload                          re-read the config file and apply the diff
    GET  /api/openapi.json                    this API as an OpenAPI 3.1 document
(the cache routes, POST /api/cache/clear and GET /api/cache, come from cache.py; the task
routes, /api/tasks..., from tasks.py; an offloaded result, GET /api/offload/{file}, from
offload.py (to its owner only); the tool index routes under /api/index from index.py)

Every answer is JSON through AdminJSONResponse; every error is {"error": "..."} with a status
from one table (json_io.py). Bodies are capped by the guard (gateway.request_max_bytes).
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus import __version__
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.errors import GatewayError
from mcp_nexus.frontends.admin import any_text
from mcp_nexus.frontends.admin.audit import audit_openapi_paths
from mcp_nexus.frontends.admin.index import index_openapi_paths
from mcp_nexus.frontends.admin.json_io import (
    MAX_JSON_DEPTH,
    AdminJSONResponse,
    BadBodyError,
    error_response,
    gateway_error_response,
    read_json_object,
)
from mcp_nexus.frontends.admin.offload import api_caller, offload_openapi_paths, offload_routes
from mcp_nexus.frontends.admin.tasks import task_openapi_paths, task_routes
from mcp_nexus.gateway import Gateway
from mcp_nexus.server_set import UnknownServerError
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.supervisor import Supervisor

SERVER_ACTIONS = ("start", "stop", "restart", "enable", "disable")


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
        # tools the catalog will not expose (bad names, another server's namespace, a built-in's name)
        "refused_tools": [
            {"tool": name, "reason": reason} for name, reason in sorted(upstream.refused_tools.items())
        ],
        "protocol": upstream.protocol_version,
        "last_error": upstream.last_error,
        "uptime": None if upstream.uptime is None else round(upstream.uptime, 3),
        "pid": upstream.pid,
        "restarts": upstream.restarts,
        "chatter": upstream.chatter(),
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


def frontend_status(gateway: Gateway) -> dict[str, Any]:
    """Links that frontends keep open themselves (e.g. Xiaozhi endpoints), by frontend name."""
    return {name: provider() for name, provider in gateway.status_providers.items()}


def tool_rows(gateway: Gateway) -> list[dict[str, Any]]:
    """One row per exposed tool: its server, fallbacks, description and input schema."""
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
                # a chain's steps (docs/CHAINS.md); null for any other tool
                "chain": (entry.local.details or {}).get("chain") if entry.local is not None else None,
            }
        )
    return rows


def admin_routes(gateway: Gateway) -> list[Route]:
    async def list_servers(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse(
            {
                "servers": [server_status(s) for s in gateway.supervisors.values()],
                "frontends": frontend_status(gateway),
                "tools": len(gateway.catalog.tool_list),
                "in_flight": gateway.in_flight,
                "stores_degraded": gateway.stores.degraded,  # details: GET /api/stores
                "started_at": gateway.started_at,
                "uptime": round(time.time() - gateway.started_at, 3),
                "version": __version__,
            }
        )

    async def list_frontends(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse({"frontends": frontend_status(gateway)})

    async def one_server(request: Request) -> AdminJSONResponse:
        name = request.path_params["name"]
        supervisor = gateway.supervisors.get(name)
        if supervisor is None:
            return error_response(404, f"no server named {name!r}", servers=sorted(gateway.supervisors))
        return AdminJSONResponse(server_status(supervisor))

    async def server_action(request: Request) -> AdminJSONResponse:
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in SERVER_ACTIONS:
            return error_response(
                404, f"unknown action {action!r}; expected one of {', '.join(SERVER_ACTIONS)}"
            )
        servers = gateway.servers
        operation = {
            "start": servers.start,
            "stop": servers.stop,
            "restart": servers.restart,
            "enable": lambda name: servers.set_enabled(name, True, gateway.config),
            "disable": lambda name: servers.set_enabled(name, False, gateway.config),
        }[action]
        try:
            await operation(name)
        except UnknownServerError as exc:
            return error_response(404, str(exc), servers=sorted(gateway.supervisors))
        supervisor = gateway.supervisors.get(name)
        if supervisor is None:  # removed by a reload while the action ran
            return error_response(404, f"no server named {name!r}", servers=sorted(gateway.supervisors))
        return AdminJSONResponse(server_status(supervisor, history=False))

    async def list_tools(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse({"tools": tool_rows(gateway)})

    async def call_tool(request: Request) -> AdminJSONResponse:
        name = request.path_params["name"]
        try:
            body = await read_json_object(request, '{"arguments": {...}}')
        except BadBodyError as exc:
            return exc.response()
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            return error_response(
                400,
                f"'arguments' must be a JSON object, got {type(arguments).__name__}",
                path="$.arguments",
            )
        try:
            result = await gateway.call_tool_result(name, arguments, caller=api_caller(request))
        except GatewayError as exc:
            return gateway_error_response(exc)
        return AdminJSONResponse(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def reload(request: Request) -> AdminJSONResponse:
        source = gateway.config_source
        if source is None:
            return error_response(409, "this gateway was started without a config file: nothing to reload")
        try:
            report = await source.reload(gateway)
        except ConfigError as exc:
            return error_response(
                422,
                f"the config file was rejected; the running config stays in force: {exc}",
                problems=[str(p) for p in exc.problems],
            )
        return AdminJSONResponse({"summary": report.summary(), **vars(report)})

    async def openapi(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse(openapi_document())

    return [
        Route("/api/servers", list_servers, methods=["GET"]),
        Route("/api/frontends", list_frontends, methods=["GET"]),
        Route("/api/servers/{name}", one_server, methods=["GET"]),
        Route("/api/servers/{name}/{action}", server_action, methods=["POST"]),
        Route("/api/tools", list_tools, methods=["GET"]),
        Route(f"/api/tools/{{name:{any_text.NAME}}}/call", call_tool, methods=["POST"]),
        Route("/api/reload", reload, methods=["POST"]),
        Route("/api/openapi.json", openapi, methods=["GET"]),
        *task_routes(gateway),
        *offload_routes(gateway),
    ]


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERROR = {"$ref": "#/components/schemas/Error"}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}


def _guarded(responses: dict[str, Any]) -> dict[str, Any]:
    """An operation's own responses plus what the guard (security.py) may answer for any route:
    400 also covers a malformed Host or Content-Length, so every operation can answer it."""
    guard = {
        "400": {"$ref": "#/components/responses/BadRequest"},
        "401": {"$ref": "#/components/responses/Unauthorized"},
        "403": {"$ref": "#/components/responses/Forbidden"},
        "413": {"$ref": "#/components/responses/TooLarge"},
        "421": {"$ref": "#/components/responses/MisdirectedRequest"},
    }
    return {**guard, **responses}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": False, "content": {"application/json": {"schema": schema}}}


def openapi_document() -> dict[str, Any]:
    """The admin API described as OpenAPI 3.1 (kept next to the routes so both change together)."""
    server = {"$ref": "#/components/schemas/Server"}
    any_object = {"type": "object"}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Nexus admin API",
            "version": __version__,
            "description": "Runtime control of a Nexus gateway. Send `Authorization: Bearer <token>` "
            "when the gateway has a token. Every error is a JSON object with an `error` message. "
            f"Request bodies are JSON objects of at most `gateway.request_max_bytes` bytes "
            f"(4 MiB by default) nested at most {MAX_JSON_DEPTH} levels deep.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "BadRequest": _json(
                    _ERROR,
                    "The body is not a JSON object as described (path says where), or a header is malformed",
                ),
                "Unauthorized": _json(_ERROR, "Missing or wrong bearer token"),
                "Forbidden": _json(
                    _ERROR,
                    "The Origin header is not a loopback or allowed origin, or the caller's role may not "
                    "do this (a viewer changing anything: `role` and `required_role` say so)",
                ),
                "TooLarge": _json(_ERROR, "The body is over gateway.request_max_bytes (limit says how many)"),
                "MisdirectedRequest": _json(_ERROR, "The Host header does not name this gateway"),
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {"type": "string", "description": "what went wrong"},
                        "path": {
                            "type": "string",
                            "description": "where in the request body (JSONPath), e.g. $.arguments.a",
                        },
                        "code": {"type": "integer", "description": "the JSON-RPC error code of a tool call"},
                        "data": {"type": "object", "description": "the JSON-RPC error data of a tool call"},
                        "limit": {"type": "integer", "description": "the body limit in bytes (413)"},
                        "servers": {"type": "array", "items": {"type": "string"}},
                        "problems": {"type": "array", "items": {"type": "string"}},
                    },
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
                        "state": {"enum": [str(state) for state in UpstreamState]},
                        "enabled": {"type": "boolean"},
                        "priority": {"type": "integer"},
                        "namespace": {"type": "string"},
                        "tools": {"type": "integer"},
                        "refused_tools": {
                            "type": "array",
                            "description": "tools not exposed: the name (unsafe characters escaped) and why",
                            "items": {
                                "type": "object",
                                "properties": {"tool": {"type": "string"}, "reason": {"type": "string"}},
                                "required": ["tool", "reason"],
                            },
                        },
                        "protocol": {"type": ["string", "null"]},
                        "last_error": {"type": ["string", "null"]},
                        "uptime": {"type": ["number", "null"], "description": "seconds READY"},
                        "pid": {"type": ["integer", "null"]},
                        "restarts": {"type": "integer"},
                        "chatter": {
                            "type": "object",
                            "description": "what the server sent unasked and what the bounds kept of it: "
                            "log_records (seen, logged, suppressed); for stdio, http and sse the notification budget's "
                            "notifications (floods, delayed, paused_seconds, paused); for stdio stderr_lines "
                            "(seen, logged, suppressed)",
                        },
                        "wanted": {"type": "boolean"},
                        "auto_restart": {"type": "boolean"},
                        "restart_attempts": {"type": "integer"},
                        "recovering": {"type": "boolean"},
                        "gave_up": {"type": "boolean"},
                        "health_failures": {"type": "integer"},
                        "health_checks": {"type": "integer"},
                        "history": {"type": "array", "items": {"$ref": "#/components/schemas/StateChange"}},
                    },
                    "required": ["name", "transport", "state", "enabled"],
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/servers": {
                "get": {
                    "summary": "List servers with state, history, tool count, last error and uptime",
                    "responses": _guarded(
                        {
                            "200": _json(
                                {
                                    "type": "object",
                                    "properties": {
                                        "servers": {"type": "array", "items": server},
                                        "frontends": any_object,
                                        "tools": {"type": "integer"},
                                        "in_flight": {"type": "integer"},
                                        "started_at": {"type": "number"},
                                        "uptime": {"type": "number"},
                                        "version": {"type": "string"},
                                    },
                                    "required": ["servers"],
                                }
                            )
                        }
                    ),
                }
            },
            "/api/frontends": {
                "get": {
                    "summary": "Links frontends keep open themselves (Xiaozhi endpoints, device envelopes)",
                    "responses": _guarded(
                        {"200": _json({"type": "object", "properties": {"frontends": any_object}})}
                    ),
                }
            },
            "/api/servers/{name}": {
                "get": {
                    "summary": "One server",
                    "parameters": [_NAME],
                    "responses": _guarded({"200": _json(server), "404": _json(_ERROR, "No such server")}),
                }
            },
            **{
                f"/api/servers/{{name}}/{action}": {
                    "post": {
                        "summary": f"{action.capitalize()} one server (the others are not touched)",
                        "parameters": [_NAME],
                        "responses": _guarded({"200": _json(server), "404": _json(_ERROR, "No such server")}),
                    }
                }
                for action in SERVER_ACTIONS
            },
            "/api/tools": {
                "get": {
                    "summary": "The aggregated tools with their server and fallbacks",
                    "responses": _guarded(
                        {
                            "200": _json(
                                {
                                    "type": "object",
                                    "properties": {
                                        "tools": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "properties": {
                                                    "name": {"type": "string"},
                                                    "server": {"type": "string"},
                                                    "fallbacks": {
                                                        "type": "array",
                                                        "items": {"type": "string"},
                                                    },
                                                    "description": {"type": "string"},
                                                    "input_schema": any_object,
                                                    "chain": {
                                                        "type": ["object", "null"],
                                                        "description": "a chain's kind (steps or code) and steps",
                                                    },
                                                },
                                            },
                                        }
                                    },
                                    "required": ["tools"],
                                }
                            )
                        }
                    ),
                }
            },
            "/api/tools/{name}/call": {
                "post": {
                    "summary": "Call a tool through the pipeline (cache, limits, offload, fallback)",
                    "parameters": [_NAME],
                    "requestBody": _json_body(
                        {
                            "type": "object",
                            "properties": {
                                "arguments": {"type": "object", "description": "the tool's arguments"}
                            },
                        }
                    ),
                    "responses": _guarded(
                        {
                            "200": _json(any_object, "The CallToolResult (isError for tool-level errors)"),
                            "403": _json(
                                _ERROR, "A bad Origin, or permission denied while calling (code -32002)"
                            ),
                            "404": _json(_ERROR, "Unknown tool"),
                            "422": _json(
                                _ERROR,
                                "The arguments do not match the tool's input schema (path names the field)",
                            ),
                            "502": _json(_ERROR, "The server of the tool failed to answer properly"),
                            "503": _json(_ERROR, "No ready server can answer the tool (code -32003)"),
                            "504": _json(_ERROR, "The tool did not answer in time (code -32001)"),
                        },
                    ),
                }
            },
            "/api/reload": {
                "post": {
                    "summary": "Re-read the config file and apply the difference",
                    "responses": _guarded(
                        {
                            "200": _json(any_object, "What changed"),
                            "409": _json(_ERROR, "Started without a config file"),
                            "422": _json(_ERROR, "The file was rejected; the running config stays"),
                        }
                    ),
                }
            },
            "/api/cache/clear": {
                "post": {
                    "summary": "Drop cached results (of one tool, or all)",
                    "requestBody": _json_body(
                        {
                            "type": "object",
                            "properties": {
                                "tool": {
                                    "type": ["string", "null"],
                                    "description": "an exposed tool name; absent or null: every tool",
                                }
                            },
                        }
                    ),
                    "responses": _guarded(
                        {
                            "200": _json(
                                {
                                    "type": "object",
                                    "properties": {
                                        "cleared": {"type": "integer"},
                                        "tool": {"type": ["string", "null"]},
                                        "entries": {"type": "integer"},
                                    },
                                    "required": ["cleared", "entries"],
                                }
                            )
                        },
                    ),
                }
            },
            "/api/cache": {
                "get": {
                    "summary": "Cache statistics",
                    "responses": _guarded(
                        {
                            "200": _json(
                                {
                                    "type": "object",
                                    "properties": {
                                        "entries": {"type": "integer"},
                                        "bytes": {"type": "integer"},
                                        "evictions": {"type": "integer"},
                                        "tools": any_object,
                                    },
                                    "required": ["entries", "bytes", "evictions", "tools"],
                                }
                            )
                        }
                    ),
                }
            },
            "/api/openapi.json": {
                "get": {"summary": "This document", "responses": _guarded({"200": _json(any_object)})}
            },
            # metrics_routes.py and the dashboard (docs/OPERATIONS.md "Metrics", docs/DASHBOARD.md)
            "/api/metrics": {
                "get": {
                    "summary": "Calls, errors, latency, cache, limits, offloads per tool/server; upstream processes",
                    "responses": _guarded({"200": _json(any_object)}),
                }
            },
            "/api/calls": {
                "get": {
                    "summary": "The most recent calls (no arguments or results), oldest first",
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 100},
                        }
                    ],
                    "responses": _guarded(
                        {
                            "200": _json({"type": "object", "properties": {"calls": {"type": "array"}}}),
                            "400": _json(_ERROR, "limit is not a whole number from 1 to 10000"),
                        }
                    ),
                }
            },
            **task_openapi_paths(_guarded),
            **offload_openapi_paths(_guarded, _json, _ERROR),
            **index_openapi_paths(_json, _guarded, _ERROR, _json_body),
            **audit_openapi_paths(_json, _guarded, _ERROR),
        },
    }
