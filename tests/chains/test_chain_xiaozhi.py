"""A chain from a Xiaozhi endpoint (the faithful fake): listed under the endpoint's naming rules,
called over the WebSocket bridge, its answer within the 1024-byte result limit. The rows stay
inside the chain (its inner call reads them whole); the voice device gets a sentence."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from mcp_nexus.gateway import Gateway
from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from xiaozhi.stack import document, running_bridge, text_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHAINS: dict[str, Any] = {
    "lights.report": {
        "description": "Say which device is the last of the house's 400.",
        "steps": [{"id": "devices", "tool": "gov.big_list", "arguments": {"items": 400, "pad": 40}}],
        "result": "The last of the devices is {{ steps.devices.399.id }}; the first is {{ steps.devices.0.id }}.",
    },
    "lights.raw": {
        "description": "Every device, as the tool gives them (far more than a voice answer holds).",
        "steps": [{"tool": "gov.big_list", "arguments": {"items": 400, "pad": 40}}],
    },
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    doc = document(tmp_path_factory.mktemp("offload"))
    doc["chains"] = copy.deepcopy(CHAINS)
    async with running_gateway(doc) as gw:
        yield gw


async def test_a_chain_answers_a_xiaozhi_endpoint_with_a_sentence(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        tools = {tool["name"]: tool for tool in session.tools}
        assert {"lights_report", "lights_raw"} <= set(tools)  # the endpoint's names: no dots
        assert tools["lights_report"]["description"] == CHAINS["lights.report"]["description"]

        reply = await session.call_tool("lights_report", {})
        assert reply["result"]["isError"] is False, reply
        assert text_of(reply) == "The last of the devices is light.room_399; the first is switch.0."


async def test_a_chains_large_answer_is_bounded_for_the_endpoint(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        reply = await session.call_tool("lights_raw", {})
        answer = text_of(reply)
        assert len(answer.encode()) <= 1024, len(answer.encode())
        assert answer.startswith("SYSTEM_ALERT: Data too large (")  # the rows stay on the gateway


async def test_a_failing_chain_tells_the_endpoint_why_in_one_line(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        reply = await session.call_tool("lights_report", {"extra": 1})
        assert reply["result"]["isError"] is True
        assert "extra" in text_of(reply) and len(text_of(reply).encode()) <= 1024
