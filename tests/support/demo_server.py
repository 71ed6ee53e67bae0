"""A small real MCP server for tests: embedded (factory) or over stdio (`python -m support.demo_server NAME`).

Each answer names the instance that gave it, so tests can see which server won a route.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def create_server(instance: str = "demo") -> MCPServer:
    server = MCPServer(f"demo-{instance}")

    @server.tool(description="Echo the text back, naming the instance that answered.")
    def echo(text: str) -> str:
        return f"{instance}: {text}"

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Fail on purpose (a tool-level error).")
    def fail(reason: str = "asked to fail") -> str:
        raise ToolError(reason)

    @server.tool(description="Report progress three times, then finish.")
    async def slow_steps(steps: int, ctx: Context) -> str:
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
            await asyncio.sleep(0.01)
        return f"{instance}: {steps} steps done"

    @server.tool(description="Add a tool named `name` to this server and announce the change.")
    async def grow(name: str, ctx: Context) -> str:
        server.add_tool(lambda: f"{instance}: I am {name}", name=name, description=f"grown tool {name}")
        await ctx.notify_tools_changed()  # 2026-07-28 clients hear it on subscriptions/listen
        with contextlib.suppress(Exception):  # not every era has a standalone channel
            await ctx.request_context.session.send_tool_list_changed()  # handshake-era clients
        return f"{instance}: grew {name}"

    @server.resource("demo://info", mime_type="text/plain")
    def info() -> str:
        return f"info from {instance}"

    @server.resource("demo://items/{item_id}")
    def item(item_id: str) -> str:
        return f"item {item_id} from {instance}"

    @server.prompt(description="Greet someone.")
    def greet(name: str) -> str:
        return f"Hello {name}, from {instance}"

    return server


def bare_demo_pair() -> dict[str, dict[str, Any]]:
    """Config entries for two demo servers sharing bare names: embedded (priority 100) and stdio (10)."""
    return {
        "demo": {
            "transport": "embedded",
            "module": "support.demo_server:create_server",
            "options": {"instance": "embedded"},
            "namespace": "",
        },
        "demo_stdio": {
            "command": sys.executable,
            "args": ["-m", "support.demo_server", "stdio-demo"],
            "env": {"PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            "namespace": "",
        },
    }


if __name__ == "__main__":
    # python -m support.demo_server NAME [--http PORT]
    instance = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        create_server(instance).run("streamable-http", host="127.0.0.1", port=port)
    else:
        create_server(instance).run("stdio")
