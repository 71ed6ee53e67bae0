"""Rate limits through a real gateway and a real client: alert text, no upstream call, hits exempt."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from mcp import Client

from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import counts, document, embedded, text

ALERT = re.compile(
    r"^SYSTEM_ALERT: Rate limit reached for (tool|server|caller) (\S+) \((.+?)\)\. "
    r"The call was not made\. Wait ([0-9.]+) seconds before calling it again\.$"
)


async def test_default_is_five_per_second_per_tool_through_a_client(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"gov": embedded()})) as gw:
        async with Client(McpFrontend(gw, "test").server, mode="legacy") as client:
            results = [await client.call_tool("gov.stamp", {"key": str(i)}) for i in range(7)]
            other_tool = await client.call_tool("gov.stamp_args", {"a": "x"})
        assert [r.is_error for r in results] == [False] * 5 + [True] * 2
        match = ALERT.match(text(results[5]))
        assert match, text(results[5])
        assert match.groups()[:3] == ("tool", "gov.stamp", "5 per second")
        assert 0 < float(match.group(4)) <= 1.0
        assert not other_tool.is_error  # each tool has its own window
        assert (await counts(gw))["stamp"] == 5  # the refused calls never reached the server
        await asyncio.sleep(float(match.group(4)) + 0.05)
        assert not (await gw.call_tool("gov.stamp", {"key": "later"})).is_error


async def test_cache_hits_do_not_count(tmp_path: Path) -> None:
    servers = {"gov": embedded(tool_config={"stamp": {"cache_ttl": 60, "rate_limit": "2/minute"}})}
    async with running_gateway(document(tmp_path, servers)) as gw:
        answers = [await gw.call_tool("gov.stamp", {"key": "same"}) for _ in range(10)]
        assert not any(r.is_error for r in answers)
        assert not (await gw.call_tool("gov.stamp", {"key": "second"})).is_error
        refused = await gw.call_tool("gov.stamp", {"key": "third"})
        assert refused.is_error and "(2 per minute)" in text(refused)
        assert (await counts(gw))["stamp"] == 2


async def test_server_and_caller_limits(tmp_path: Path) -> None:
    servers = {
        "gov": embedded(rate_limit=None, server_rate_limit="3/minute"),
        "free": embedded("free", rate_limit=None),
    }
    async with running_gateway(document(tmp_path, servers, caller_rate_limit="4/minute")) as gw:
        tools = ["gov.stamp", "gov.stamp_args", "gov.big_text"]
        args = [{"key": "k"}, {"a": "a"}, {"lines": 1}]
        assert not any([(await gw.call_tool(t, a)).is_error for t, a in zip(tools, args, strict=True)])
        refused = await gw.call_tool("gov.stamp", {"key": "again"}, caller=Caller("http", "other-client"))
        assert ALERT.match(text(refused)) and "server gov (3 per minute)" in text(refused)
        # the caller "api:-" made 3 calls: one more is allowed, then its own limit applies
        assert not (await gw.call_tool("free.stamp", {"key": "k"})).is_error
        refused = await gw.call_tool("free.stamp", {"key": "k2"})
        assert "caller api:- (4 per minute)" in text(refused)
        # another client is not held back by that caller's limit
        assert not (
            await gw.call_tool("free.stamp", {"key": "k3"}, caller=Caller("http", "other-client"))
        ).is_error
        meta = refused.meta or {}
        assert meta["nexus/rateLimited"]["scope"] == "caller"
        assert json.loads(text(await gw.call_tool("free.counts", {}, caller=Caller("x"))))["stamp"] == 2
