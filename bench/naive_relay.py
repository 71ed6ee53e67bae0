"""A naive MCP relay built from the SDK alone: the baseline bench/peers.py compares Nexus with.

    .venv/bin/python bench/naive_relay.py COMMAND [ARGS...]

Serves stdio with the SDK's low-level `Server` and forwards tools/list and tools/call to
COMMAND through one `mcp.Client` session opened at start: what one writes in an afternoon
with nothing but the SDK, defaults everywhere (so the upstream session negotiates the
era the SDK's `Client` picks by default).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp import Client, StdioServerParameters, types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

UPSTREAM = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))


@asynccontextmanager
async def upstream_session(_server: Server[Client]) -> AsyncIterator[Client]:
    async with Client(UPSTREAM) as client:
        yield client


async def list_tools(
    ctx: ServerRequestContext[Client], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return await ctx.lifespan_context.list_tools()


async def call_tool(
    ctx: ServerRequestContext[Client], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return await ctx.lifespan_context.call_tool(params.name, params.arguments)


relay = Server("naive-relay", lifespan=upstream_session, on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await relay.run(read, write, relay.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
