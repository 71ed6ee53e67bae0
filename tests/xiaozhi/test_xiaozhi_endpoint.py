"""The bridge against a fake Xiaozhi endpoint: handshake variants, lists, calls, and the endpoint's manners."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio

from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.config.xiaozhi import XiaozhiSettings
from mcp_nexus.gateway import Gateway
from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from support.governance_server import SLEEP_EVENTS
from support.polling import eventually
from xiaozhi.stack import document, running_bridge, text_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAME_RE = r"^[A-Za-z0-9_-]{1,64}$"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    async with running_gateway(document(tmp_path_factory.mktemp("offload"), time_server=True)) as gw:
        yield gw


@pytest.mark.parametrize(
    ("string_ids", "after_answer"), [(False, False), (True, True)], ids=["int-ids-eager", "str-ids-waiting"]
)
async def test_handshake_list_ping_and_call(gateway: Gateway, string_ids: bool, after_answer: bool) -> None:
    async with FakeXiaozhiEndpoint(string_ids=string_ids, initialized_after_answer=after_answer) as fake:
        async with running_bridge(gateway, endpoints=[fake.url()], page_bytes=1500):
            session = await fake.next_session()
            init = session.initialize_result
            assert init is not None
            assert init["protocolVersion"] == "2024-11-05"  # the version the endpoint asked for
            assert init["capabilities"]["tools"] == {"listChanged": True}
            # initialize went out with id 0 (or "xz-0"): its answer was matched by that exact id
            first = session.received[0]
            assert first["id"] == ("xz-0" if string_ids else 0)

            names = [tool["name"] for tool in session.tools]
            assert session.pages > 1  # the list did not fit one 1500-byte page: nextCursor was followed
            assert len(names) == len(set(names))
            assert {"gov_stamp", "gov_big_list", "demo_echo", "python_sandbox"} <= set(names)
            assert all(re.match(NAME_RE, name) for name in names)
            echo = next(t for t in session.tools if t["name"] == "demo_echo")
            assert echo["inputSchema"]["properties"]["text"]["type"] == "string"

            pong = await session.ping()
            assert pong["result"] == {}
            assert isinstance(pong["id"], str) == string_ids

            reply = await session.call_tool("demo_echo", {"text": "hi"})
            assert text_of(reply) == "stdio-demo: hi"
            assert reply["result"]["isError"] is False
            # a binary frame with a trailing newline is accepted too
            binary = await session.request(
                "tools/call", {"name": "gov_stamp", "arguments": {"key": "b"}, "serialNumber": 7}, binary=True
            )
            assert text_of(binary).startswith("gov:b:")
        assert fake.binary_frames == 0 and fake.text_frames > 0  # the bridge only ever sent text frames


async def test_tool_errors_come_back_as_is_error_text(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        failed = await session.call_tool("gov_fail", {"reason": "broken bulb"})
        assert failed["result"]["isError"] is True and "broken bulb" in text_of(failed)
        unknown = await session.call_tool("nope_nothing", {})
        assert unknown["result"]["isError"] is True and text_of(unknown) == "Unknown tool: nope_nothing"
        # the gateway's own name is not a name this endpoint knows
        dotted = await session.call_tool("gov.stamp", {"key": "x"})
        assert dotted["result"]["isError"] is True
        bad_args = await session.call_tool("demo_add", {"a": "not a number", "b": 1})
        assert bad_args["result"]["isError"] is True
        no_name = await session.request("tools/call", {"arguments": {}})
        assert no_name["error"]["code"] == -32602 and "name" in no_name["error"]["message"]
        unknown_method = await session.request("resources/list")
        assert unknown_method["error"]["code"] == -32601
        await session.send_raw("{not json\n")
        await eventually(
            lambda: any(m.get("error", {}).get("code") == -32700 for m in session.received),
            what="parse error",
        )
        # still serving after all that
        assert text_of(await session.call_tool("demo_add", {"a": 2, "b": 3})) == "5"


async def test_multi_part_results_are_merged_into_the_first_text_item(gateway: Gateway) -> None:
    async def parts(arguments: dict[str, Any], caller: Any = None) -> types.CallToolResult:
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="first"),
                types.TextContent(type="text", text="second"),
                types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
            ]
        )

    tool = types.Tool(name="xz.parts", description="three parts", input_schema={"type": "object"})
    gateway.add_local_tool(LocalTool(tool, parts))
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        reply = await session.call_tool("xz_parts", {})
        assert text_of(reply) == "first\nsecond\n[image image/png, 6 bytes, not shown]"


async def test_call_timeout_answers_before_the_endpoint_gives_up(gateway: Gateway) -> None:
    async with (
        FakeXiaozhiEndpoint() as fake,
        running_bridge(gateway, endpoints=[fake.url()], call_timeout=0.3),
    ):
        session = await fake.next_session()
        reply = await session.call_tool("gov_sleep", {"seconds": 3})
        assert reply["result"]["isError"] is True
        assert text_of(reply) == "Tool gov_sleep did not answer within 0.3 s"


async def test_second_connection_with_same_token_replaces_and_bridge_recovers(gateway: Gateway) -> None:
    from websockets.asyncio.client import connect

    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]) as bridge:
        first = await fake.next_session()
        # another client (not the bridge) takes the token's socket, and answers nothing
        async with connect(fake.url(), user_agent_header="intruder"):
            await first.closed.wait()
            # the bridge dials again and takes the socket back
            second = await fake.next_session(after=1)
        assert text_of(await second.call_tool("demo_echo", {"text": "back"})) == "stdio-demo: back"
        assert fake.max_bridge_sockets["good-token"] == 1  # never two bridge sockets to one endpoint
        status = bridge.status()[0]
        assert status["connected"] and status["sessions"] >= 2
        assert status["last_close_code"] == 1000


async def test_bad_token_1008_backs_off_to_the_maximum(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake:
        async with running_bridge(
            gateway, endpoints=[fake.url("wrong-token-0123456789")], backoff_max=0.6
        ) as bridge:
            await eventually(lambda: len(fake.bridge_attempts()) >= 2, what="a second attempt")
            await asyncio.sleep(0.9)
            attempts = fake.bridge_attempts()
            status = bridge.status()[0]
        gaps = [b.at - a.at for a, b in itertools.pairwise(attempts)]
        # min is 0.05 s: without the 1008 rule the first retries would come after 0.05, 0.1, 0.2 s
        assert gaps and min(gaps) >= 0.55, gaps
        assert len(attempts) <= 3
        assert status["last_close_code"] == 1008
        assert "1008" in status["last_error"] and "token" in status["last_error"]
        assert "wrong-token" not in json.dumps(status)  # the token never shows in full
        assert status["url"].endswith("token=***6789")


async def test_close_4004_is_logged_clearly_and_redialled(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_nexus.frontends.xiaozhi")
    async with FakeXiaozhiEndpoint() as fake:
        fake.refuse_next = [(4004, "agent unbound")]
        async with running_bridge(gateway, endpoints=[fake.url()]) as bridge:
            session = await fake.next_session()
            assert text_of(await session.call_tool("demo_add", {"a": 1, "b": 1})) == "2"
            status = bridge.status()[0]
    assert status["connected"] and status["last_close_code"] == 4004
    assert len(fake.bridge_attempts()) == 2
    logged = [r for r in caplog.records if "4004" in r.getMessage()]
    assert logged and logged[0].levelno == logging.ERROR
    assert "agent unbound" in logged[0].getMessage() and "handshake" in logged[0].getMessage()
    assert "good-token" not in caplog.text


async def test_dropped_connection_mid_call_cancels_the_call_and_recovers(gateway: Gateway) -> None:
    SLEEP_EVENTS["gov"].clear()
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]) as bridge:
        session = await fake.next_session()
        _, pending = await session.start_request(
            "tools/call", {"name": "gov_sleep", "arguments": {"seconds": 5}, "serialNumber": 1}
        )
        await eventually(lambda: SLEEP_EVENTS["gov"] == ["started"], what="the call to reach the server")
        session.drop()
        again = await fake.next_session(after=1)
        await eventually(lambda: "cancelled" in SLEEP_EVENTS["gov"], what="the orphaned call to be cancelled")
        # no answer could travel on the dead socket: the endpoint side learnt of the close instead
        with pytest.raises(ConnectionError):
            await pending
        assert text_of(await again.call_tool("demo_echo", {"text": "ok"})) == "stdio-demo: ok"
        assert fake.max_bridge_sockets["good-token"] == 1
        status = bridge.status()[0]
        assert status["last_close_code"] == 1006  # abnormal closure: no close frame


async def test_backoff_resets_after_a_successful_session(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake:
        # three refused attempts grow the delay (0.05, 0.1, 0.2 s), then a good session, then a close:
        # the next dial must come after the minimum again, not after 0.4 s.
        fake.refuse_next = [(1011, "busy"), (1011, "busy"), (1011, "busy")]
        async with running_bridge(
            gateway, endpoints=[fake.url()], backoff_max=2.0, backoff_jitter=0
        ) as bridge:
            session = await fake.next_session()
            await session.close(1001, "endpoint restarting")
            await fake.next_session(after=1)
            attempts = fake.bridge_attempts()
            assert bridge.status()[0]["attempts"] == 5
        gaps = [b.at - a.at for a, b in itertools.pairwise(attempts)]
        assert gaps[0] < gaps[1] < gaps[2]  # exponential while failing
        assert gaps[3] < gaps[2] * 2  # after a good session the wait starts over (it would be 0.4 s)
        assert gaps[3] < 0.33


async def test_several_endpoints_at_once_are_independent(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint({"token-a", "token-b"}) as fake:
        urls = [fake.url("token-a"), fake.url("token-b")]
        async with running_bridge(gateway, endpoints=urls) as bridge:
            a = await fake.next_session("token-a")
            b = await fake.next_session("token-b")
            await a.close(1001, "going away")
            assert text_of(await b.call_tool("demo_echo", {"text": "b"})) == "stdio-demo: b"
            a2 = await fake.next_session("token-a", after=1)
            assert text_of(await a2.call_tool("demo_echo", {"text": "a"})) == "stdio-demo: a"
            rows = bridge.status()
        assert [row["url"].rsplit("=", 1)[1] for row in rows] == ["***", "***"]
        assert rows[0]["calls_served"] == 1 and rows[1]["calls_served"] == 1
        assert fake.max_bridge_sockets == {"token-a": 1, "token-b": 1}


async def test_tool_list_change_is_announced_and_new_tool_callable(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        await session.call_tool("demo_grow", {"name": "sprout"})

        def announced() -> bool:
            return any(n.get("method") == "notifications/tools/list_changed" for n in session.notifications)

        await eventually(announced, what="notifications/tools/list_changed")
        names = [tool["name"] for tool in await session.list_tools()]
        assert "demo_sprout" in names
        assert text_of(await session.call_tool("demo_sprout", {})) == "stdio-demo: I am sprout"


async def test_allow_and_deny_filter_what_the_endpoint_sees(gateway: Gateway) -> None:
    tools = {"allow": ["demo.*", "python_sandbox"], "deny": ["demo.fail"]}
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()], tools=tools):
        session = await fake.next_session()
        names = {tool["name"] for tool in session.tools}
        assert "demo_echo" in names and "python_sandbox" in names
        assert "demo_fail" not in names and not any(n.startswith("gov_") for n in names)
        hidden = await session.call_tool("gov_stamp", {"key": "x"})
        assert hidden["result"]["isError"] is True and "Unknown tool" in text_of(hidden)


async def test_offloaded_result_fits_and_python_sandbox_filters_it(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        big = await session.call_tool("gov_big_list", {"items": 400})
        preview = text_of(big)
        assert len(preview.encode()) <= 1024
        match = re.match(
            r"SYSTEM_ALERT: Data too large \((\d+) bytes\)\. Saved to file (\S+\.json)\. "
            r"Use python_sandbox to read and filter\.",
            preview,
        )
        assert match, preview
        code = "print(len([x for x in data if 'light' in x['id']]), data[-1]['id'])"
        filtered = await session.call_tool("python_sandbox", {"code": code, "files": [match.group(2)]})
        assert filtered["result"]["isError"] is False, filtered
        assert text_of(filtered).strip() == "200 light.room_399"


async def test_third_party_time_server_through_the_endpoint(gateway: Gateway) -> None:
    async with FakeXiaozhiEndpoint() as fake, running_bridge(gateway, endpoints=[fake.url()]):
        session = await fake.next_session()
        assert {"time_get_current_time", "time_convert_time"} <= {tool["name"] for tool in session.tools}
        reply = await session.call_tool("time_get_current_time", {"timezone": "Europe/Paris"})
        assert reply["result"]["isError"] is False
        answer = json.loads(text_of(reply))
        assert answer["timezone"] == "Europe/Paris" and "datetime" in answer
        bad = await session.call_tool("time_get_current_time", {"timezone": "Mars/Olympus"})
        assert bad["result"]["isError"] is True and "Mars/Olympus" in text_of(bad)


async def test_result_limit_bytes_sets_the_xiaozhi_size_limit(gateway: Gateway) -> None:
    # The config is the one source of the limit: the section's own spelling wins for "xiaozhi".
    original = gateway.config
    gateway.config = original.model_copy(update={"xiaozhi": XiaozhiSettings(result_limit_bytes=400)})
    try:
        async with (
            FakeXiaozhiEndpoint() as fake,
            running_bridge(gateway, endpoints=[fake.url()], result_limit_bytes=400),
        ):
            session = await fake.next_session()
            preview = text_of(await session.call_tool("gov_big_list", {"items": 300}))
            assert preview.startswith("SYSTEM_ALERT: Data too large") and len(preview.encode()) <= 400
            long_text = text_of(await session.call_tool("gov_wide_text", {"chars": 600}))
            assert len(long_text.encode()) <= 400
    finally:
        gateway.config = original  # the gateway is shared by this module's tests


async def test_unanswered_websocket_pings_end_the_socket_and_it_is_redialled(gateway: Gateway) -> None:
    async with (
        FakeXiaozhiEndpoint() as fake,
        running_bridge(gateway, endpoints=[fake.url()], ping_interval=0.2, ping_timeout=0.3) as bridge,
    ):
        session = await fake.next_session()
        session.ws.transport.pause_reading()  # the endpoint hangs: no pong will come back
        again = await fake.next_session(after=1, timeout=5)
        status = bridge.status()[0]
        assert status["last_close_code"] == 1006  # no close frame came back from the hung endpoint
        assert status["last_close_reason"].endswith("Nexus closed with 1011 keepalive ping timeout")
        assert text_of(await again.call_tool("demo_echo", {"text": "alive"})) == "stdio-demo: alive"
        session.ws.transport.abort()
