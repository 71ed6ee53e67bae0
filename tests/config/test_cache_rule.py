"""A wide `cache_ttl` (gateway or server) caches read-only tools only; a tool's own entry may opt in (issue 11 item 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_nexus.gateway import Gateway
from support.gateway import running_gateway
from support.governance_gateway import document, text


def ledger(**extra: Any) -> dict[str, Any]:
    return {
        "transport": "embedded",
        "module": "support.ledger_server:create_server",
        "rate_limit": None,
        **extra,
    }


async def twice(gateway: Gateway, tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    first = await gateway.call_tool(tool, arguments)
    second = await gateway.call_tool(tool, arguments)
    return text(first), text(second)


async def test_gateway_wide_ttl_never_caches_writes(tmp_path: Path) -> None:
    doc = document(tmp_path, {"ledger": ledger()}, cache_ttl=3600)
    async with running_gateway(doc) as gateway:
        # the positive control: a read-only tool is cached by the gateway-wide TTL
        assert await twice(gateway, "ledger.balance", {"account": "a"}) == ("ledger:balance:a:1",) * 2
        # no hints (a write), destructive, and read-only-but-destructive: every call reaches the server
        assert await twice(gateway, "ledger.deposit", {"account": "a", "amount": 5}) == (
            "ledger:deposit:a+5:1",
            "ledger:deposit:a+5:2",
        )
        assert await twice(gateway, "ledger.close", {"account": "a"}) == (
            "ledger:close:a:1",
            "ledger:close:a:2",
        )
        assert await twice(gateway, "ledger.statement", {"account": "a"}) == (
            "ledger:statement:a:1",
            "ledger:statement:a:2",
        )


async def test_server_wide_ttl_never_caches_writes(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"ledger": ledger(cache_ttl=3600)})) as gateway:
        assert await twice(gateway, "ledger.balance", {"account": "b"}) == ("ledger:balance:b:1",) * 2
        assert await twice(gateway, "ledger.deposit", {"account": "b", "amount": 1}) == (
            "ledger:deposit:b+1:1",
            "ledger:deposit:b+1:2",
        )


async def test_a_tools_own_entry_may_ask_for_caching_by_name(tmp_path: Path) -> None:
    servers = {
        "ledger": ledger(
            cache_ttl=3600,
            tool_config={"deposit": {"cache_ttl": 3600}, "balance": {"cache_ttl": 0}},
        )
    }
    async with running_gateway(document(tmp_path, servers)) as gateway:
        assert (
            await twice(gateway, "ledger.deposit", {"account": "c", "amount": 2})
            == ("ledger:deposit:c+2:1",) * 2
        )
        # and a read-only tool's own 0 turns the server-wide TTL off for it
        assert await twice(gateway, "ledger.balance", {"account": "c"}) == (
            "ledger:balance:c:1",
            "ledger:balance:c:2",
        )
