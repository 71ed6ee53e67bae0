"""Chains in a running gateway, in front of a real stdio test server: listed, run, governed as a
whole and per inner call, reloaded; each failure an error naming the chain and the step."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio

from mcp_nexus.chains.runner import CHAIN_META_KEY
from mcp_nexus.config.load import config_from_document
from mcp_nexus.errors import InvalidArgumentsError, ToolTimeoutError
from mcp_nexus.events import ListChanged
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import counts, document, stdio, text

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY_SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}

CHAINS: dict[str, Any] = {
    # stamp, then stamp_args with the first result; answers a sentence built from both
    "stamp_twice": {
        "description": "Stamp a key, then stamp the first stamp.",
        "input_schema": KEY_SCHEMA,
        "steps": [
            {"id": "first", "tool": "gov.stamp", "arguments": {"key": "{{ input.key }}"}},
            {"tool": "gov.stamp_args", "arguments": {"a": "{{ steps.first }}", "b": "{{ input.key }}"}},
        ],
        "result": "first {{ steps.first }}, then {{ steps.step2 }}",
    },
    # a result too large for the caller (offloaded by the inner call), read back as data
    "last_device": {
        "description": "The id of the last of 400 devices.",
        "steps": [{"id": "devices", "tool": "gov.big_list", "arguments": {"items": 400}}],
        "result": {"last": "{{ steps.devices.399.id }}", "first": "{{ steps.devices.0.id }}"},
    },
    "limited": {
        "description": "Rate limited as a whole.",
        "input_schema": KEY_SCHEMA,
        "steps": [{"tool": "gov.stamp_args", "arguments": {"a": "{{ input.key }}"}}],
        "tool_config": {"rate_limit": "1/minute"},
    },
    "cached": {
        "description": "Cached as a whole.",
        "input_schema": KEY_SCHEMA,
        "steps": [{"tool": "gov.stamp_args", "arguments": {"b": "{{ input.key }}"}}],
        "tool_config": {"cache_ttl": 60},
    },
    "slow": {
        "description": "Longer than its own timeout.",
        "steps": [{"tool": "gov.sleep", "arguments": {"seconds": 5}}],
        "tool_config": {"timeout": 0.5},
    },
    "fails_first": {
        "description": "Its first step fails; the second must not run.",
        "steps": [
            {"tool": "gov.fail", "arguments": {"reason": "disk on fire"}},
            {"tool": "gov.stamp_args", "arguments": {"a": "never"}},
        ],
    },
    "names_a_missing_tool": {
        "description": "Its second step names a tool nobody lists.",
        "steps": [
            {"tool": "gov.stamp_args", "arguments": {"a": "never"}},
            {"tool": "gov.stmp", "arguments": {}},
        ],
    },
    "inner_limited": {
        "description": "Its step's tool is rate limited for direct calls and chains alike.",
        "steps": [{"tool": "gov.wide_text", "arguments": {"chars": 3}}],
    },
    "outer": {
        "description": "A chain calling a chain.",
        "input_schema": KEY_SCHEMA,
        "steps": [{"id": "inner", "tool": "stamp_twice", "arguments": {"key": "{{ input.key }}"}}],
        "result": "outer saw: {{ steps.inner }}",
    },
}


def config(offload: Path, chains: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = document(offload, {"gov": stdio("chains")})
    # Inner stamp calls are cached by the server's own setting; stamp_args is limited per tool.
    doc["servers"]["gov"]["cache_ttl"] = 60
    doc["servers"]["gov"]["rate_limit"] = None  # the default 5/second would trip the counts probes
    doc["servers"]["gov"]["tool_config"] = {
        "stamp_args": {"cache_ttl": 0},
        "wide_text": {"rate_limit": "1/minute", "cache_ttl": 0},
    }
    doc["chains"] = copy.deepcopy(CHAINS if chains is None else chains)
    return doc


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    async with running_gateway(config(tmp_path_factory.mktemp("offload"))) as gw:
        yield gw


def caller(client: str) -> Caller:
    return Caller("test", client)


async def call(
    gateway: Gateway, name: str, arguments: dict[str, Any], client: str = "c"
) -> types.CallToolResult:
    return await gateway.call_tool_result(name, arguments, caller=caller(client))


async def test_chains_are_listed_like_any_tool(gateway: Gateway) -> None:
    listed = {tool.name: tool for tool in gateway.catalog.tool_list}
    assert set(CHAINS) <= set(listed)
    assert listed["stamp_twice"].description == "Stamp a key, then stamp the first stamp."
    assert listed["stamp_twice"].input_schema == KEY_SCHEMA


async def test_a_chain_runs_its_steps_with_earlier_results_in_later_arguments(gateway: Gateway) -> None:
    before = await counts(gateway)
    result = await call(gateway, "stamp_twice", {"key": "k1"})
    assert not result.is_error, text(result)
    first = f"chains:k1:{before.get('stamp', 0) + 1}"
    assert text(result) == f"first {first}, then chains:a={first}:b=k1:{before.get('stamp_args', 0) + 1}"
    steps = result.meta[CHAIN_META_KEY]["steps"]  # type: ignore[index]
    assert [(s["id"], s["tool"]) for s in steps] == [("first", "gov.stamp"), ("step2", "gov.stamp_args")]


async def test_each_inner_call_is_governed_as_the_callers_own(gateway: Gateway) -> None:
    await call(gateway, "stamp_twice", {"key": "inner-cache"})
    after_first = await counts(gateway)
    again = await call(gateway, "stamp_twice", {"key": "inner-cache"})
    after_second = await counts(gateway)
    # gov.stamp is read-only under the server's cache_ttl: the second run's first step is a cache hit
    assert after_second["stamp"] == after_first["stamp"]
    assert after_second["stamp_args"] == after_first["stamp_args"] + 1
    assert not again.is_error
    stats = gateway.metrics.snapshot()["tools"]
    assert stats["gov.stamp"]["calls"] >= 2 and stats["stamp_twice"]["calls"] >= 2


async def test_an_inner_call_is_rate_limited_like_a_direct_call(gateway: Gateway) -> None:
    direct = await call(gateway, "gov.wide_text", {"chars": 3}, client="limits")
    assert not direct.is_error
    refused = await call(gateway, "inner_limited", {}, client="limits")  # the same tool's window
    assert refused.is_error
    assert text(refused).startswith(
        "chain inner_limited: step 1 (step1, gov.wide_text): the tool failed: SYSTEM_ALERT: Rate limit"
    )


async def test_a_large_inner_result_is_read_back_as_data(gateway: Gateway) -> None:
    result = await call(gateway, "last_device", {})
    assert not result.is_error, text(result)
    assert result.structured_content == {"last": "light.room_399", "first": "switch.0"}


async def test_the_chains_own_rate_limit_applies_to_the_chain_call(gateway: Gateway) -> None:
    assert not (await call(gateway, "limited", {"key": "r"}, client="rl")).is_error
    before = await counts(gateway)
    refused = await call(gateway, "limited", {"key": "r"}, client="rl")
    assert refused.is_error and text(refused).startswith("SYSTEM_ALERT: Rate limit reached")
    assert await counts(gateway) == before  # refused as a whole: no step ran


async def test_the_chains_own_cache_answers_a_repeat(gateway: Gateway) -> None:
    first = await call(gateway, "cached", {"key": "same"})
    before = await counts(gateway)
    second = await call(gateway, "cached", {"key": "same"})
    assert text(second) == text(first) and await counts(gateway) == before


async def test_the_chains_own_timeout_bounds_the_whole_chain(gateway: Gateway) -> None:
    with pytest.raises(ToolTimeoutError) as caught:
        await call(gateway, "slow", {})
    assert "slow did not answer within 0.5 s" in caught.value.message


async def test_the_chains_input_is_validated_against_its_schema(gateway: Gateway) -> None:
    with pytest.raises(InvalidArgumentsError):
        await call(gateway, "stamp_twice", {"key": 5})


async def test_a_failing_step_ends_the_chain_naming_the_step(gateway: Gateway) -> None:
    before = await counts(gateway)
    result = await call(gateway, "fails_first", {})
    assert result.is_error
    assert (
        text(result)
        == "chain fails_first: step 1 (step1, gov.fail): the tool failed: Error executing tool fail: disk on fire"
    )
    assert (await counts(gateway)).get("stamp_args") == before.get("stamp_args")  # step 2 never ran


async def test_an_unknown_tool_is_found_before_any_step_runs(gateway: Gateway) -> None:
    before = await counts(gateway)
    result = await call(gateway, "names_a_missing_tool", {})
    assert result.is_error
    message = text(result)
    assert message.startswith(
        "chain names_a_missing_tool: step 2 (step2) calls 'gov.stmp', which no server lists now"
    )
    assert "did you mean gov.stamp" in message and message.endswith("(no step was run)")
    assert (await counts(gateway)).get("stamp_args") == before.get("stamp_args")


async def test_a_chain_may_call_a_chain(gateway: Gateway) -> None:
    result = await call(gateway, "outer", {"key": "nest"})
    assert not result.is_error, text(result)
    assert text(result).startswith("outer saw: first chains:nest:")


async def test_a_reload_adds_changes_and_removes_chains_and_announces_it(
    tmp_path: Path,
) -> None:
    offload = tmp_path / "offload"
    async with running_gateway(
        config(offload, {"one": CHAINS["stamp_twice"], "two": CHAINS["cached"]})
    ) as gateway:
        announced: list[str] = []
        gateway.events.subscribe(ListChanged, lambda event: announced.append(event.kind))
        changed = {
            "one": {**CHAINS["stamp_twice"], "result": "only {{ steps.first }}"},  # changed
            "three": CHAINS["last_device"],  # added; "two" removed
        }
        new, _warnings = config_from_document(config(offload, changed))
        report = await gateway.reload(new)
        assert sorted(report.chains) == ["one", "three", "two"]
        assert "chains one, two, three" in report.summary() or "chains" in report.summary()
        assert "tools" in announced
        names = {tool.name for tool in gateway.catalog.tool_list}
        assert {"one", "three"} <= names and "two" not in names
        result = await call(gateway, "one", {"key": "re"})
        assert text(result).startswith("only chains:re:")
        announced.clear()
        same, _warnings = config_from_document(config(offload, changed))
        assert (await gateway.reload(same)).chains == [] and "tools" not in announced


async def test_a_chain_reached_again_at_run_time_is_refused(tmp_path: Path) -> None:
    # Config refuses cycles it can see; through call_tool (search mode) a chain reaches itself
    # at run time only, and is stopped there.
    loop = {
        "description": "Calls itself through call_tool.",
        "steps": [{"tool": "call_tool", "arguments": {"name": "loop", "arguments": {}}}],
    }
    doc = config(tmp_path / "offload", {"loop": loop})
    doc["gateway"]["tool_search"] = {"mode": "on"}
    async with running_gateway(doc) as gateway:
        result = await call(gateway, "loop", {})
    assert result.is_error
    assert "chain loop: it is already running (loop -> loop): a chain cannot call itself" in json.dumps(
        text(result)
    )
