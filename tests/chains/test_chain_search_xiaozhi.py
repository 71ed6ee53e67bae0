"""A Xiaozhi endpoint in search mode (`tool_search.frontends.xiaozhi: on`, the faithful fake) finds a
chain with `find_tools` and runs it with `call_tool`; the answer is a sentence within 1024 bytes."""

from __future__ import annotations

import json
from pathlib import Path

from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from xiaozhi.stack import document, running_bridge, text_of

REPORT = {
    "description": "Say which device is the last of the house's 400, as a short sentence.",
    "steps": [{"id": "devices", "tool": "gov.big_list", "arguments": {"items": 400, "pad": 40}}],
    "result": "The last of the devices is {{ steps.devices.399.id }}.",
}


async def test_the_endpoint_finds_and_runs_a_chain_through_the_search_tools(tmp_path: Path) -> None:
    doc = document(tmp_path / "offload")
    doc["gateway"]["tool_search"] = {"frontends": {"xiaozhi": "on"}}
    doc["chains"] = {"house.last_device": REPORT}
    async with running_gateway(doc) as gateway:
        assert await gateway.index_sync.wait_settled(30)
        async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
            session = await fake.next_session()
            assert {"find_tools", "call_tool"} <= {tool["name"] for tool in session.tools}

            found = await session.call_tool("find_tools", {"query": "which device comes last", "limit": 1})
            rows = json.loads(text_of(found))
            assert [row["name"] for row in rows] == ["house.last_device"], rows
            assert "chain" in rows[0]["tags"]

            reply = await session.call_tool("call_tool", {"name": "house.last_device", "arguments": {}})
            assert reply["result"]["isError"] is False, reply
            answer = text_of(reply)
            assert answer == "The last of the devices is light.room_399." and len(answer.encode()) <= 1024
