"""A low-level SDK server whose tool schema is given verbatim: `$defs`, `$ref` and `$anchor` included."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

REF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {"point": {"$anchor": "pt", "type": "object", "properties": {"x": {"type": "number"}}}},
    "properties": {"p": {"$ref": "#/$defs/point"}},
    "required": ["p"],
}


def create_server() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="measure", description="Take a point.", input_schema=REF_SCHEMA)]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        point = (params.arguments or {}).get("p", {})
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"x={point.get('x')}")])

    return Server("raw", on_list_tools=list_tools, on_call_tool=call_tool)
