"""Search mode for the Xiaozhi frontend (`tool_search.frontends.xiaozhi: on`), against the fake endpoint."""

from __future__ import annotations

import json
from pathlib import Path

from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from support.polling import eventually
from xiaozhi.stack import document, running_bridge, text_of


async def test_the_endpoint_sees_find_tools_and_call_tool_and_calls_through_them(tmp_path: Path) -> None:
    doc = document(tmp_path / "offload")
    doc["gateway"]["tool_search"] = {"frontends": {"xiaozhi": "on"}, "pinned": ["gov.stamp"]}
    doc["gateway"]["index"] = {"path": str(tmp_path / "index.sqlite3")}
    async with running_gateway(doc) as gateway:
        assert await gateway.index_sync.wait_settled(30)
        # Both servers are READY, but on a loaded machine the first sync may have timed out
        # asking one of them: the index then follows it (incremental sync). Searched once it holds
        # demo.echo; the failure names what the index said instead.
        await eventually(
            lambda: gateway.index.get_tool_entry("demo.echo") is not None,
            timeout=30,
            what=f"demo.echo in the index ({gateway.index_sync.describe()})",
        )
        async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
            session = await fake.next_session()
            names = {tool["name"] for tool in session.tools}
            assert {"find_tools", "call_tool", "gov_stamp"} <= names
            assert "demo_echo" not in names

            found = await session.call_tool("find_tools", {"query": "echo the text back", "limit": 1})
            assert [row["name"] for row in json.loads(text_of(found))] == ["demo.echo"]
            reply = await session.call_tool("call_tool", {"name": "demo.echo", "arguments": {"text": "hi"}})
            assert text_of(reply) == "stdio-demo: hi"
        # the MCP frontends keep their full list: the mode was set for xiaozhi only
        assert "demo.echo" in {tool.name for tool in gateway.catalog.tool_list}
