"""An embedded MCP server whose tools differ only in their annotations, for the cache rule.

`support.ledger_server:create_server`. Every answer carries a per-tool call count, so a
repeated answer shows it came from the cache. Writes (`deposit`) must never be cached by a
server- or gateway-wide `cache_ttl`; reads (`balance`) may.
"""

from __future__ import annotations

from collections import Counter

import mcp_types as types
from mcp.server.mcpserver import MCPServer

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
READ_ONLY_BUT_DESTRUCTIVE = types.ToolAnnotations(read_only_hint=True, destructive_hint=True)
DESTRUCTIVE = types.ToolAnnotations(destructive_hint=True)


def create_server(instance: str = "ledger") -> MCPServer:
    server = MCPServer(f"ledger-{instance}")
    calls: Counter[str] = Counter()

    def answer(tool: str, detail: str) -> str:
        calls[tool] += 1
        return f"{instance}:{tool}:{detail}:{calls[tool]}"

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def balance(account: str) -> str:
        """Read an account's balance."""
        return answer("balance", account)

    @server.tool(structured_output=False)
    def deposit(account: str, amount: int) -> str:
        """Add money to an account (no hints: a write)."""
        return answer("deposit", f"{account}+{amount}")

    @server.tool(annotations=READ_ONLY_BUT_DESTRUCTIVE, structured_output=False)
    def statement(account: str) -> str:
        """Contradictory hints: destructive wins, never cached by a wide TTL."""
        return answer("statement", account)

    @server.tool(annotations=DESTRUCTIVE, structured_output=False)
    def close(account: str) -> str:
        """Close an account."""
        return answer("close", account)

    return server
