"""An embedded MCP server for the admin API tests: answers the admin API must encode with care."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.mcpserver import MCPServer


def create_server() -> MCPServer:
    server = MCPServer("admin-peer")

    # Text only: the surrogate reaches the admin API's encoder rather than a structured-output step.
    @server.tool(
        description="Answer with a lone UTF-16 surrogate, which UTF-8 cannot encode.",
        structured_output=False,
    )
    def lone_surrogate() -> str:
        return "before \ud800 after"

    @server.tool(description="The same, as structured content too.")
    def lone_surrogate_structured() -> str:
        return "before \ud800 after"

    @server.tool(description="Return the value it was given (any JSON).")
    def echo_value(value: Any) -> Any:
        return {"value": value}

    @server.tool(description="Sleep, then answer (for timeouts).")
    async def sleep(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "awake"

    return server
