"""Chains in the tool index and search mode: `find_tools` finds a chain by what it does (with its
code form), `call_tool` runs it, a profile that leaves it out does not find it, and `nexus index ls`
lists it; a real gateway over HTTP in front of a real (embedded) server."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from typer.testing import CliRunner

from mcp_nexus.cli.index import app as index_cli
from mcp_nexus.errors import GatewayError
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.runtime import Runtime
from support.gateway import running
from support.governance_gateway import document, embedded, text

pytestmark = pytest.mark.asyncio(loop_scope="module")

ROOM = {"type": "object", "properties": {"room": {"type": "string"}}, "required": ["room"]}

CHAINS: dict[str, Any] = {
    "house.lights_report": {
        "description": "Tell which lights of a room are still switched on, in one sentence.",
        "input_schema": ROOM,
        "steps": [{"id": "lights", "tool": "gov.big_list", "arguments": {"items": 3}}],
        "result": "In the {{ input.room }} {{ steps.lights.1.id }} is on.",
    },
    "ledger.double_stamp": {
        "description": "Put two stamps on a ledger key and report both.",
        "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        "steps": [
            {"id": "first", "tool": "gov.stamp", "arguments": {"key": "{{ input.key }}"}},
            {"tool": "gov.stamp_args", "arguments": {"a": "{{ steps.first }}"}},
        ],
        "tool_config": {"cost": "high"},
    },
}

PROFILES: dict[str, Any] = {
    "gov_only": {"tools": ["gov.*"]},  # no chain in it
    "chains_only": {"tools": ["tag:chain"]},  # every chain, by the index's tag
}


def config(offload: Path) -> dict[str, Any]:
    doc = document(offload, {"gov": embedded("search")})
    doc["gateway"]["tool_search"] = {"mode": "on"}
    doc["chains"] = copy.deepcopy(CHAINS)
    doc["profiles"] = copy.deepcopy(PROFILES)
    return doc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Runtime]:
    async with running(config(tmp_path_factory.mktemp("offload")), http=True) as served:
        assert await served.gateway.index_sync.wait_settled(20)
        yield served


async def find(
    gateway: Gateway, query: str, profile: str | None = None, **extra: Any
) -> list[dict[str, Any]]:
    result = await gateway.call_tool_result(
        "find_tools", {"query": query, **extra}, caller=Caller("test", "c", profile=profile)
    )
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return list(result.structured_content["tools"])


async def test_find_tools_finds_a_chain_by_what_it_does(runtime: Runtime) -> None:
    hits = await find(runtime.gateway, "which lights are still on in the kitchen")
    assert hits, "no hit at all"
    top = hits[0]
    assert top["name"] == "house.lights_report", [hit["name"] for hit in hits]
    assert top["code"] == "tools.house.lights_report(room=...)"  # the form code mode calls it by
    assert top["description"] == CHAINS["house.lights_report"]["description"]
    assert top["input_schema"] == ROOM
    assert "chain" in top["tags"] and top["server"] == "nexus" and top["available"] is True


async def test_the_chain_tag_keeps_only_chains(runtime: Runtime) -> None:
    hits = await find(runtime.gateway, "stamp", tags=["chain"])
    assert [hit["name"] for hit in hits] == ["ledger.double_stamp"]


async def test_a_chains_entry_says_what_it_is(runtime: Runtime) -> None:
    entry = runtime.gateway.index.get_tool_entry("ledger.double_stamp")
    assert entry is not None
    assert entry.server_id == "nexus" and entry.tags[-1] == "chain"
    assert entry.cost_estimate == "high"  # its tool_config's word
    assert runtime.gateway.index.describe()["chains"] == 2
    # never saved with the servers' snapshot: the config is where chains come from
    assert "nexus" not in runtime.gateway.index.snapshot.servers


async def test_call_tool_in_search_mode_runs_the_chain_from_an_http_client(runtime: Runtime) -> None:
    async with Client(runtime.url, mode="legacy") as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert {"find_tools", "call_tool"} <= listed and "gov.stamp" not in listed  # search mode
        found = await client.call_tool("find_tools", {"query": "put two stamps on a key", "limit": 3})
        assert json.loads(_first_text(found))[0]["name"] == "ledger.double_stamp"
        result = await client.call_tool(
            "call_tool", {"name": "ledger.double_stamp", "arguments": {"key": "k"}}
        )
        assert not result.is_error, _first_text(result)
        assert _first_text(result).startswith("search:a=search:k:")  # step 2 stamped step 1's answer


async def test_a_profile_without_the_chain_does_not_find_or_reach_it(runtime: Runtime) -> None:
    gateway = runtime.gateway
    hidden = await find(gateway, "which lights are still on in the kitchen", profile="gov_only")
    assert "house.lights_report" not in [hit["name"] for hit in hidden]
    with pytest.raises(GatewayError):
        await gateway.call_tool_result(
            "call_tool",
            {"name": "house.lights_report", "arguments": {"room": "hall"}},
            caller=Caller("test", "c", profile="gov_only"),
        )
    shown = await find(gateway, "which lights are still on in the kitchen", profile="chains_only")
    assert [hit["name"] for hit in shown][:1] == ["house.lights_report"]
    assert all("chain" in hit["tags"] for hit in shown)


async def test_nexus_index_ls_lists_the_chains(runtime: Runtime) -> None:
    base = runtime.url.removesuffix(runtime.gateway.config.gateway.path)
    outcome = await asyncio.to_thread(
        CliRunner().invoke, index_cli, ["ls", "--tag", "chain", "--json", "--url", base]
    )
    assert outcome.exit_code == 0, outcome.output
    rows = json.loads(outcome.output)
    assert sorted(row["name"] for row in rows) == ["house.lights_report", "ledger.double_stamp"]


def _first_text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


async def test_code_in_the_sandbox_finds_the_chain_and_calls_it_by_its_code_form(runtime: Runtime) -> None:
    code = (
        'hit = find_tools("which lights are still on in the kitchen", 1)[0]\n'
        'print(hit["name"], hit["call"])\n'
        'print(tools.house.lights_report(room="hall"))\n'
    )
    result = await runtime.gateway.call_tool_result(
        "python_sandbox", {"code": code}, caller=Caller("test", "c")
    )
    assert not result.is_error, text(result)
    assert text(result).splitlines()[:2] == [
        "house.lights_report tools.house.lights_report(room=...)",
        "In the hall light.room_1 is on.",
    ], text(result)
