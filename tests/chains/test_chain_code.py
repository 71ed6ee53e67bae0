"""Chains with a Python body: run by code mode in the real bubblewrap sandbox, in front of a real
stdio server; the chain's arguments are `input`, a top-level `return` is the answer, the rows
stay in the sandbox; called from Xiaozhi the answer is a sentence within 1024 bytes."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio

from mcp_nexus.chains.runner import CHAIN_META_KEY
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from support.governance_gateway import counts, document, stdio, text
from xiaozhi.stack import running_bridge, text_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

# The join in small: every light among 400 devices, counted in the sandbox.
COUNT_LIGHTS = """
rows = call_tool("gov.big_list", {"items": input["devices"]})
lights = [row["id"] for row in rows if row["id"].startswith("light.")]
return {"lights": len(lights), "last": lights[-1]}
"""

SAY_LIGHTS = """
rows = tools.gov.big_list(items=400, pad=40)
lights = [row["id"] for row in rows if row["id"].startswith("light.")]
return f"{len(lights)} of the {len(rows)} devices are lights; the last is {lights[-1]}."
"""

CHAINS: dict[str, Any] = {
    "count_lights": {
        "description": "Count the lights among the devices.",
        "input_schema": {
            "type": "object",
            "properties": {"devices": {"type": "integer"}},
            "required": ["devices"],
        },
        "code": COUNT_LIGHTS,
    },
    "say_lights": {"description": "Say how many devices are lights.", "code": SAY_LIGHTS},
    "broken": {"description": "Its body raises.", "code": "raise ValueError('the body gave up')"},
    # a step-list chain whose step is a code chain
    "lights_twice": {
        "description": "Count the lights of 10 devices through another chain.",
        "steps": [{"id": "n", "tool": "count_lights", "arguments": {"devices": 10}}],
        "result": "{{ steps.n.lights }} lights, the last {{ steps.n.last }}",
    },
}

CALLER = Caller("stdio", "desk")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    doc = document(tmp_path_factory.mktemp("offload"), {"gov": stdio("code")}, rate_limit=None)
    doc["chains"] = copy.deepcopy(CHAINS)
    async with running_gateway(doc) as gw:
        yield gw


async def call(gateway: Gateway, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await gateway.call_tool_result(name, arguments, caller=CALLER)


async def test_a_code_chain_joins_rows_in_the_sandbox_and_returns_the_answer(gateway: Gateway) -> None:
    before = (await counts(gateway)).get("big_list", 0)
    result = await call(gateway, "count_lights", {"devices": 400})
    assert not result.is_error, text(result)
    assert result.structured_content == {"lights": 200, "last": "light.room_399"}
    assert result.meta[CHAIN_META_KEY] == {"chain": "count_lights", "code": True, "tool_calls": 1}  # type: ignore[index]
    assert (await counts(gateway))["big_list"] == before + 1
    # the inner call ran the pipeline as the same client, marked as made by sandboxed code
    assert gateway.metrics.snapshot()["frontends"]["stdio/sandbox"]["calls"] >= 1


async def test_a_failing_body_is_an_error_naming_the_chain(gateway: Gateway) -> None:
    result = await call(gateway, "broken", {})
    assert result.is_error
    assert text(result).startswith("chain broken: its Python body failed:\n[python_sandbox: exit code 1]")
    assert "ValueError: the body gave up" in text(result)


async def test_a_step_list_chain_may_call_a_code_chain(gateway: Gateway) -> None:
    result = await call(gateway, "lights_twice", {})
    assert not result.is_error, text(result)
    assert text(result) == "5 lights, the last light.room_9"
    assert gateway.metrics.snapshot()["frontends"]["stdio/chain"]["calls"] >= 1


async def test_code_in_python_sandbox_cannot_start_a_code_chain(gateway: Gateway) -> None:
    result = await call(gateway, "python_sandbox", {"code": "return call_tool('say_lights', {})"})
    assert result.is_error
    assert "chain say_lights: python_sandbox code cannot start another python_sandbox run" in text(result)


async def test_a_code_chain_answers_xiaozhi_with_a_sentence(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        assert "say_lights" in {tool["name"] for tool in session.tools}
        reply = await session.call_tool("say_lights", {})
        assert reply["result"]["isError"] is False, reply
        answer = text_of(reply)
        assert answer == "200 of the 400 devices are lights; the last is light.room_399."
        assert len(answer.encode()) <= 1024
