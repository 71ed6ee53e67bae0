"""Nexus's own transports, declared as plugins are (pyproject.toml, `mcp_nexus.transports`).

Their fields (`command`, `url`, `module`, ...) are `ServerConfig`'s own and checked there, so
they carry no config model; the session classes are imported at the first connect.
"""

from __future__ import annotations

from mcp_nexus.plugins.specs import TransportSpec

STDIO = TransportSpec(
    "stdio",
    "mcp_nexus.upstream.stdio:StdioSession",
    kind="process",
    priority=10,  # a child process is the most fragile (docs/CONFIG.md)
    description="a child process speaking JSON-RPC lines on stdin/stdout",
)
HTTP = TransportSpec(
    "http",
    "mcp_nexus.upstream.http:HttpSession",
    kind="network",
    priority=50,
    url_schemes=("http", "https"),
    description="streamable HTTP",
)
SSE = TransportSpec(
    "sse",
    "mcp_nexus.upstream.sse:SseSession",
    kind="network",
    priority=50,
    description="the older HTTP+SSE transport",
)
EMBEDDED = TransportSpec(
    "embedded",
    "mcp_nexus.upstream.embedded:EmbeddedSession",
    kind="in_process",
    priority=100,  # an in-process server cannot fail over the network
    description="a Python MCP server inside the gateway",
)
