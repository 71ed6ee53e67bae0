"""An embedded MCP server whose one tool has the argument shapes the dashboard's "try it" form must get right.

`record` takes a required string, optional nullable fields of each kind (string, integer,
enum: pydantic writes them as `anyOf: [{...}, {"type": "null"}]` with a null default) and a
required nullable string (no default: the form sends null when it is left empty). It answers
with the arguments it received, as JSON.
"""

from __future__ import annotations

import json
from typing import Literal

from mcp.server.mcpserver import MCPServer


def create_server() -> MCPServer:
    server = MCPServer("form")

    @server.tool(description="Echo the arguments back as JSON.")
    def record(
        label: str,
        maybe: str | None,
        note: str | None = None,
        count: int | None = None,
        colour: Literal["red", "green"] | None = None,
    ) -> str:
        return json.dumps({"label": label, "maybe": maybe, "note": note, "count": count, "colour": colour})

    return server
