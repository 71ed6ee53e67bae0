"""The gateway end to end in one process: embedded and stdio demo servers, a real SDK client on the frontend."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_nexus.errors import InvalidArgumentsError, UnknownToolError
from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.gateway import Gateway
from mcp_nexus.upstream.state import UpstreamState
from support.demo_server import bare_demo_pair
from support.gateway import running_gateway
from support.polling import eventually
from support.processes import TESTS
from support.raw_server import REF_SCHEMA


def make_config(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    servers: dict[str, Any] = {
        **bare_demo_pair(),
        "other": {
            "command": sys.executable,
            "args": ["-m", "support.demo_server", "other"],
            "env": {"PYTHONPATH": str(TESTS)},
            "tools": {"allow": ["echo", "add", "grow", "slow_steps", "grown_*"], "deny": ["add"]},
        },
        "raw": {"transport": "embedded", "module": "support.raw_server:create_server"},
        # Its retries are set far off: the first (1 s after the failure by default) could land as a
        # slow setup ends, and the first test would read CONNECTING where it checks the failure.
        "broken": {"command": "/nonexistent/mcp-server", "restart": {"backoff_min": 300, "backoff_max": 300}},
    }
    servers.update(extra or {})
    return {"gateway": {"include_builtins": False}, "servers": servers}


# One gateway for the read-only tests (starting stdio servers costs seconds); tests that
# change servers get their own through `fresh_gateway`.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway() -> AsyncIterator[Gateway]:
    async with running_gateway(make_config()) as gw:
        yield gw


@pytest_asyncio.fixture(loop_scope="module")
async def fresh_gateway() -> AsyncIterator[Gateway]:
    async with running_gateway(make_config()) as gw:
        yield gw


def tool_names(result: types.ListToolsResult) -> set[str]:
    return {tool.name for tool in result.tools}


async def test_failed_server_is_reported_and_others_serve(gateway: Gateway) -> None:
    broken = gateway.upstreams["broken"]
    assert broken.state == UpstreamState.ERROR
    assert broken.last_error is not None and "nonexistent" in broken.last_error
    assert all(u.state == UpstreamState.READY for name, u in gateway.upstreams.items() if name != "broken")


async def test_namespacing_filters_and_bare_names(gateway: Gateway) -> None:
    names = {tool.name for tool in gateway.catalog.tool_list}
    # bare names from the two demo servers (namespace "")
    assert {"echo", "add", "fail", "slow_steps", "grow"} <= names
    # namespaced by key; allow-list then deny-list applied to "other"
    assert {"other.echo", "other.grow", "other.slow_steps"} <= names
    assert "other.add" not in names and "other.fail" not in names
    assert "raw.measure" in names


async def test_bare_name_keeps_candidates_in_priority_order(gateway: Gateway) -> None:
    entry = gateway.catalog.tools["echo"]
    assert [c.upstream.name for c in entry.candidates] == ["demo", "demo_stdio"]  # embedded 100 > stdio 10
    result = await gateway.call_tool("echo", {"text": "hi"})
    assert result.content[0].text == "embedded: hi"  # type: ignore[union-attr]
    assert result.meta and result.meta["nexus/server"] == "demo"


async def test_priority_override_changes_the_winner() -> None:
    doc = make_config()
    doc["servers"]["demo_stdio"]["priority"] = 500
    del doc["servers"]["broken"], doc["servers"]["other"]
    async with running_gateway(doc) as gw:
        result = await gw.call_tool("echo", {"text": "x"})
        assert result.content[0].text == "stdio-demo: x"  # type: ignore[union-attr]


async def test_input_schema_passes_through_untouched(gateway: Gateway) -> None:
    async with Client(McpFrontend(gateway, "test").server, mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["raw.measure"].input_schema == REF_SCHEMA


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_client_of_each_era_calls_through_the_frontend(gateway: Gateway, mode: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with Client(McpFrontend(gateway, "test").server, mode=mode) as client:
        assert (client.protocol_version == "2026-07-28") == (mode == "auto")
        assert {"echo", "other.echo", "raw.measure"} <= tool_names(await client.list_tools())
        result = await client.call_tool("other.echo", {"text": "yo"})
        assert result.content[0].text == "other: yo"  # type: ignore[union-attr]
        result = await client.call_tool("raw.measure", {"p": {"x": 3}})
        assert result.content[0].text == "x=3"  # type: ignore[union-attr]
        result = await client.call_tool("other.slow_steps", {"steps": 3}, progress_callback=on_progress)
        assert result.content[0].text == "other: 3 steps done"  # type: ignore[union-attr]
    assert [p[0] for p in progress] == [1, 2, 3]


async def test_tool_error_result_is_passed_on(gateway: Gateway) -> None:
    result = await gateway.call_tool("fail", {"reason": "boom"})
    assert result.is_error
    assert "boom" in result.content[0].text  # type: ignore[union-attr]


async def test_unknown_tool_is_a_clear_protocol_error(gateway: Gateway) -> None:
    with pytest.raises(UnknownToolError, match=r"Unknown tool: nope\.nothing"):
        await gateway.call_tool("nope.nothing", {})
    async with Client(McpFrontend(gateway, "test").server, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("nope.nothing", {})
    assert caught.value.error.code == -32602
    assert "nope.nothing" in caught.value.error.message


async def test_bad_arguments_are_refused_before_the_upstream_and_not_fatal(gateway: Gateway) -> None:
    with pytest.raises(InvalidArgumentsError) as caught:
        await gateway.call_tool("add", {"a": "not a number", "b": 2})
    assert caught.value.code == -32602
    assert "a" in caught.value.message
    # the gateway is still fine afterwards
    assert (await gateway.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"  # type: ignore[union-attr]


async def test_resources_and_templates_route_to_their_server(gateway: Gateway) -> None:
    async with Client(McpFrontend(gateway, "test").server, mode="legacy") as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert "demo://info" in listed
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert "demo://items/{item_id}" in templates
        read = await client.read_resource("demo://items/42")
        assert read.contents[0].text == "item 42 from embedded"  # type: ignore[union-attr]
        with pytest.raises(MCPError):
            await client.read_resource("nowhere://at/all")


async def test_prompts_are_namespaced_and_routed(gateway: Gateway) -> None:
    async with Client(McpFrontend(gateway, "test").server, mode="legacy") as client:
        names = {p.name for p in (await client.list_prompts()).prompts}
        assert {"greet", "other.greet"} <= names
        prompt = await client.get_prompt("other.greet", {"name": "Ada"})
        assert "Hello Ada, from other" in prompt.messages[0].content.text  # type: ignore[union-attr]
        with pytest.raises(MCPError):
            await client.get_prompt("missing.prompt", {})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_upstream_list_change_reaches_the_client(fresh_gateway: Gateway, mode: str) -> None:
    gateway = fresh_gateway
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    frontend = McpFrontend(gateway, "test")
    async with Client(frontend.server, mode=mode, message_handler=on_message) as client:
        grown = f"grown_{mode}"
        if mode == "auto":
            async with client.listen(tools_list_changed=True) as subscription:
                await client.call_tool("other.grow", {"name": grown})
                with anyio.fail_after(10):
                    async for _event in subscription:
                        break
        else:
            await client.call_tool("other.grow", {"name": grown})
            with anyio.fail_after(10):
                await changed.wait()

        async def listed() -> bool:
            return f"other.{grown}" in tool_names(await client.list_tools())

        await eventually(listed, what=f"other.{grown} listed", interval=0.05)
        result = await client.call_tool(f"other.{grown}", {})
        assert result.content[0].text == f"other: I am {grown}"  # type: ignore[union-attr]


async def test_stopping_a_server_removes_its_tools_and_notifies(fresh_gateway: Gateway) -> None:
    gateway = fresh_gateway
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with Client(
        McpFrontend(gateway, "test").server, mode="legacy", message_handler=on_message
    ) as client:
        assert "other.echo" in tool_names(await client.list_tools())
        await gateway.upstreams["other"].stop()
        with anyio.fail_after(10):
            await changed.wait()
        assert "other.echo" not in tool_names(await client.list_tools())


async def test_list_results_carry_cache_hints_for_modern_clients(gateway: Gateway) -> None:
    async with Client(McpFrontend(gateway, "test").server, mode="auto") as client:
        tools = await client.list_tools()
        prompts = await client.list_prompts()
    ttl_ms = int(gateway.config.gateway.list_ttl * 1000)
    assert (tools.ttl_ms, tools.cache_scope) == (ttl_ms, "private")
    assert (prompts.ttl_ms, prompts.cache_scope) == (ttl_ms, "private")


async def test_protocol_choice_per_server() -> None:
    doc = {
        "gateway": {"include_builtins": False},
        "servers": {
            "auto": {"transport": "embedded", "module": "support.demo_server:create_server"},
            "old": {
                "command": sys.executable,
                "args": ["-m", "support.demo_server", "old"],
                "env": {"PYTHONPATH": str(TESTS)},
                "protocol": "legacy",
            },
        },
    }
    async with running_gateway(doc) as gw:
        assert gw.upstreams["auto"].protocol_version == "2026-07-28"
        assert gw.upstreams["old"].protocol_version == "2025-11-25"
        result = await gw.call_tool_result("old.echo", {"text": "hi"})
        assert result.content[0].text == "old: hi"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_reads_prompts_and_completions_carry_the_gateways_stamp_never_the_upstreams(
    gateway: Gateway, mode: str
) -> None:
    """The upstreams speak 2026-07-28 and stamp each result with their own serverInfo; the client's
    server is the gateway, so a 2026-07-28 client sees its stamp and a handshake-era one none."""
    frontend = McpFrontend(gateway, "test")
    async with Client(frontend.server, mode=mode) as client:
        answers = [
            await client.read_resource("demo://info"),
            await client.get_prompt("other.greet", {"name": "Ada"}),
        ]
    ours = frontend.server.server_info_stamp
    for answer in answers:
        stamp = (answer.meta or {}).get("io.modelcontextprotocol/serverInfo")
        allowed = [ours] if mode == "auto" else [None, ours]
        assert stamp in allowed, answer.meta
