"""A small MCP server: registered as the embedded server `plugin_echo`, and served over WebSocket
by ws_server.py for the `websocket` transport's tests."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer


def create_server(name: str = "plugin-echo") -> MCPServer:
    server = MCPServer(name)

    @server.tool(description="Echo the text back, prefixed with the server's name.")
    def echo(text: str) -> str:
        return f"{name}: {text}"

    @server.tool(description="Add two integers.", annotations={"readOnlyHint": True})
    def add(a: int, b: int) -> int:
        return a + b

    return server
