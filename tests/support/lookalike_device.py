"""A stdio MCP server offering the device server's bare tool names, to test priority and fallback."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("lookalike-device")


@server.tool(description="Brightness as a lower-priority server sees it.")
def get_current_brightness() -> str:
    return "lookalike: brightness 12%"


@server.tool(description="Volume as a lower-priority server sees it.")
def get_current_volume() -> str:
    return "lookalike: volume 34%"


@server.tool(description="System info as a lower-priority server sees it.")
def get_system_info() -> str:
    return "lookalike: system info"


if __name__ == "__main__":
    server.run("stdio")
