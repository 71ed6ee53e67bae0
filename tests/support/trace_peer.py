"""An HTTP MCP server that reports the trace context it was sent: the `traceparent` headers of
each HTTP request (kept in `headers`) and, from its tool `meta`, the `_meta` of the call."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server import Server
from starlette.types import ASGIApp, Receive, Scope, Send

TOOLS = [
    types.Tool(
        name="meta",
        description="Answer with the trace context of this call.",
        input_schema={"type": "object"},
    ),
    types.Tool(name="fail", description="Answer isError.", input_schema={"type": "object"}),
]


class HeaderLog:
    """ASGI middleware: remembers every request's traceparent header (None when absent)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.traceparents: list[str | None] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            value = headers.get(b"traceparent")
            self.traceparents.append(value.decode() if value is not None else None)
        await self.app(scope, receive, send)


def create_app(name: str = "peer") -> HeaderLog:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "fail":
            return types.CallToolResult(content=[types.TextContent(type="text", text="no")], is_error=True)
        meta = dict(params.meta or {})
        text = json.dumps({k: v for k, v in meta.items() if k in ("traceparent", "tracestate")})
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server: Server[Any] = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
    return HeaderLog(server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"))
