"""Serve the gateway over this process's stdin/stdout (for desktop MCP clients)."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from mcp_nexus.frontends.mcp_server import McpFrontend
from mcp_nexus.gateway import Gateway


async def serve_stdio(gateway: Gateway) -> None:
    frontend = McpFrontend(gateway, "stdio")
    try:
        async with stdio_server() as (read_stream, write_stream):
            await frontend.server.run(
                read_stream, write_stream, frontend.server.create_initialization_options()
            )
    finally:
        frontend.close()
