"""The device "type: mcp" envelope in both roles: Nexus listening for device-like peers, and Nexus as a device."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
import pytest_asyncio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.frontends.xiaozhi import XiaozhiBridge
from mcp_nexus.gateway import Gateway
from support.gateway import running_gateway
from support.polling import eventually
from xiaozhi.fake_backend import FakeBackend
from xiaozhi.stack import document, running_bridge

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOKEN = "device-token-0123456789"
HELLO = {"type": "hello", "version": 1, "transport": "websocket", "features": {"mcp": True}}
PADDING_TOOLS = 40


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    async with running_gateway(document(tmp_path_factory.mktemp("offload"))) as gw:
        # Enough tools with long descriptions that the list needs several ~8000-byte pages.
        async def answer(arguments: dict[str, Any], caller: Any = None) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

        for i in range(PADDING_TOOLS):
            tool = types.Tool(
                name=f"pad.tool_{i:02d}", description="d" * 400, input_schema={"type": "object"}
            )
            gw.add_local_tool(LocalTool(tool, answer))
        yield gw


def envelope_server(**values: Any) -> dict[str, Any]:
    return {"envelope_server": {"enabled": True, "port": 0, "token": TOKEN, **values}}


def device_url(bridge: XiaozhiBridge) -> str:
    assert bridge.envelope_server is not None
    return f"ws://127.0.0.1:{bridge.envelope_server.port}/xiaozhi/v1/"


def device_headers(token: str | None = TOKEN, device_id: str | None = "aa:bb:cc:dd:ee:ff") -> dict[str, str]:
    headers = {"Protocol-Version": "1", "Client-Id": "0b8f9c7e-client"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if device_id is not None:
        headers["Device-Id"] = device_id
    return headers


class Device:
    """The test's side of an envelope session: sends requests, reads envelopes."""

    def __init__(self, ws: ClientConnection, session_id: str) -> None:
        self.ws = ws
        self.session_id = session_id
        self.ids = itertools.count(1)

    async def send_payload(self, payload: Any) -> None:
        await self.ws.send(json.dumps({"session_id": self.session_id, "type": "mcp", "payload": payload}))

    async def request(
        self, method: str, params: dict[str, Any] | None = None, request_id: Any = None
    ) -> dict[str, Any]:
        rid = next(self.ids) if request_id is None else request_id
        await self.send_payload({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        envelope = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
        assert envelope["type"] == "mcp" and envelope["session_id"] == self.session_id
        payload: dict[str, Any] = envelope["payload"]
        assert payload["id"] == rid
        return payload

    async def silent_for(self, seconds: float) -> None:
        """Assert nothing arrives for `seconds` (what an ignored message looks like)."""
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(self.ws.recv(), seconds)


async def open_device(bridge: XiaozhiBridge) -> tuple[ClientConnection, Device]:
    ws = await connect(device_url(bridge), additional_headers=device_headers())
    await ws.send(json.dumps(HELLO))
    hello = json.loads(await asyncio.wait_for(ws.recv(), 5))
    assert hello["type"] == "hello" and hello["transport"] == "websocket"
    assert isinstance(hello["session_id"], str) and hello["session_id"]
    return ws, Device(ws, hello["session_id"])


# -- server role --------------------------------------------------------------------------------


async def test_device_session_lists_in_capped_pages_and_calls(gateway: Gateway) -> None:
    async with running_bridge(gateway, **envelope_server()) as bridge:
        ws, device = await open_device(bridge)
        async with ws:
            init = await device.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {}})
            assert init["result"]["protocolVersion"] == "2024-11-05"
            assert init["result"]["capabilities"] == {"tools": {}}

            names: list[str] = []
            cursor: str | None = None
            pages = 0
            while True:
                page = await device.request("tools/list", {"cursor": cursor} if cursor else {})
                pages += 1
                assert len(json.dumps(page["result"], separators=(",", ":")).encode()) <= 8000
                names += [tool["name"] for tool in page["result"]["tools"]]
                cursor = page["result"].get("nextCursor")
                if cursor is None:
                    break
                assert isinstance(cursor, str)
            assert pages >= 3  # 40 tools of ~450 bytes plus the servers' own cannot fit two pages
            assert len(names) == len(set(names))
            # the cursor names the next tool, as devices do; names keep their dots on this channel
            assert {"gov.stamp", "demo.echo", "pad.tool_39"} <= set(names)

            result = (
                await device.request("tools/call", {"name": "demo.add", "arguments": {"a": 4, "b": 5}})
            )["result"]
            assert result == {"content": [{"type": "text", "text": "9"}], "isError": False}
            failed = (await device.request("tools/call", {"name": "gov.fail", "arguments": {}}))["result"]
            assert failed["isError"] is True and len(failed["content"]) == 1

            # device rules: a string id gets no answer, notifications get no answer
            await device.send_payload({"jsonrpc": "2.0", "id": "text-id", "method": "ping", "params": {}})
            await device.send_payload({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await device.silent_for(0.3)
            assert (await device.request("ping"))["result"] == {}

            rows = [row for row in bridge.status() if row["role"] == "envelope_server"]
            assert rows[0]["connected"] and rows[0]["peers"] == ["aa:bb:cc:dd:ee:ff"]
            assert rows[0]["calls_served"] == 2
            assert TOKEN not in json.dumps(bridge.status())


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        (device_headers(token="wrong"), 401),
        (device_headers(token=None), 401),
        (device_headers(device_id=None), 400),
    ],
    ids=["bad-token", "no-token", "no-device-id"],
)
async def test_refused_before_the_websocket_opens(
    gateway: Gateway, headers: dict[str, str], status: int
) -> None:
    async with running_bridge(gateway, **envelope_server()) as bridge:
        with pytest.raises(InvalidStatus) as refused:
            await connect(device_url(bridge), additional_headers=headers)
        assert refused.value.response.status_code == status


async def test_hello_timeout_closes_the_channel(gateway: Gateway) -> None:
    async with (
        running_bridge(gateway, **envelope_server(hello_timeout=0.3)) as bridge,
        connect(device_url(bridge), additional_headers=device_headers()) as ws,
    ):
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
        assert ws.close_code == 1002 and ws.close_reason == "no hello within 0.3 s"


@pytest.mark.parametrize(
    ("first", "reason"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"type": "hello", "version": 1, "transport": "websocket"}), "features.mcp"),
        (json.dumps({"type": "listen", "state": "start"}), "expected a hello first"),
        (json.dumps([1, 2]), "not a JSON object"),
    ],
    ids=["not-json", "no-mcp-feature", "not-a-hello", "not-an-object"],
)
async def test_malformed_hello_is_refused_with_the_reason(gateway: Gateway, first: str, reason: str) -> None:
    async with (
        running_bridge(gateway, **envelope_server()) as bridge,
        connect(device_url(bridge), additional_headers=device_headers()) as ws,
    ):
        await ws.send(first)
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)
        assert ws.close_code == 1002 and reason in (ws.close_reason or "")


async def test_malformed_messages_after_hello_are_ignored(gateway: Gateway) -> None:
    async with running_bridge(gateway, **envelope_server()) as bridge:
        ws, device = await open_device(bridge)
        async with ws:
            await ws.send("{garbage")
            await ws.send(b"\x00\x01 audio")
            await ws.send(json.dumps({"session_id": device.session_id, "type": "mcp"}))  # no payload
            await ws.send(json.dumps({"session_id": device.session_id, "type": "mcp", "payload": [1]}))
            await ws.send(
                json.dumps(
                    {"session_id": "someone-else", "type": "mcp", "payload": {"id": 5, "method": "ping"}}
                )
            )
            await device.send_payload({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "oops"})
            reply = json.loads(await asyncio.wait_for(ws.recv(), 5))["payload"]
            assert reply["id"] == 9 and "expected an object" in reply["error"]["message"]
            assert (await device.request("ping"))["result"] == {}


async def test_silent_channel_is_dead_after_the_idle_timeout(gateway: Gateway) -> None:
    async with running_bridge(gateway, **envelope_server(idle_timeout=0.4)) as bridge:
        ws, device = await open_device(bridge)
        async with ws:
            assert (await device.request("ping"))["result"] == {}
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)
            assert ws.close_code == 1000 and "no data for 0.4 s" in (ws.close_reason or "")
        await eventually(lambda: not bridge.status()[0]["connected"], what="the server to record the close")


# -- client role --------------------------------------------------------------------------------


def envelope_client(url: str, **values: Any) -> dict[str, Any]:
    return {
        "envelope_client": {
            "url": url,
            "token": "backend-secret",
            "device_id": "11:22:33:44:55:66",
            "client_id": "nexus-client",
            "backoff_min": 0.05,
            "backoff_max": 0.4,
            **values,
        }
    }


async def test_nexus_as_a_device_offers_its_tool_set(gateway: Gateway) -> None:
    async with FakeBackend() as backend:
        config = envelope_client(backend.url, tools={"allow": ["demo.*"]})
        async with running_bridge(gateway, **config) as bridge:
            session = await backend.next_session()
            assert session.headers["Authorization"] == "Bearer backend-secret"
            assert session.headers["Device-Id"] == "11:22:33:44:55:66"
            assert session.headers["Client-Id"] == "nexus-client"
            assert session.headers["Protocol-Version"] == "1"
            assert session.hello["type"] == "hello" and session.hello["features"] == {"mcp": True}

            init = await session.request(
                1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}}
            )
            assert init["session_id"] == session.session_id and init["type"] == "mcp"
            assert init["payload"]["result"]["protocolVersion"] == "2024-11-05"
            await session.send_mcp({"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed = (await session.request(2, "tools/list"))["payload"]["result"]
            names = {tool["name"] for tool in listed["tools"]}
            assert names and all(name.startswith("demo.") for name in names)  # only the offered set
            called = await session.request(
                3, "tools/call", {"name": "demo.echo", "arguments": {"text": "hi"}}
            )
            assert called["payload"] == {
                "jsonrpc": "2.0",
                "id": 3,
                "result": {"content": [{"type": "text", "text": "stdio-demo: hi"}], "isError": False},
            }
            hidden = await session.request(4, "tools/call", {"name": "gov.stamp", "arguments": {"key": "k"}})
            assert hidden["payload"]["result"]["isError"] is True
            row = bridge.status()[0]
            assert row["role"] == "envelope_client" and row["connected"] and row["calls_served"] == 2


async def test_no_hello_from_the_server_times_out_and_retries(gateway: Gateway) -> None:
    async with FakeBackend(hello="silent") as backend:
        async with running_bridge(gateway, **envelope_client(backend.url, hello_timeout=0.3)) as bridge:
            await eventually(lambda: len(backend.closes) >= 2, what="two timed-out hellos")
            row = bridge.status()[0]
        assert backend.closes[0] == (1002, "no hello from the server within 0.3 s")
        assert row["last_error"] == "no hello from the server within 0.3 s"
        assert not row["connected"]


async def test_server_hello_without_session_id_is_refused(gateway: Gateway) -> None:
    async with FakeBackend(hello="no-session") as backend:
        async with running_bridge(gateway, **envelope_client(backend.url)) as bridge:
            await eventually(lambda: len(backend.closes) >= 1, what="the refused hello")
            await eventually(lambda: bridge.status()[0]["last_error"] is not None, what="the error")
            assert "session_id" in bridge.status()[0]["last_error"]
        assert backend.closes[0][0] == 1002


async def test_bad_token_at_the_backend_backs_off_to_the_maximum(gateway: Gateway) -> None:
    async with FakeBackend(token="another-secret") as backend:
        async with running_bridge(gateway, **envelope_client(backend.url, backoff_max=0.5)) as bridge:
            await eventually(lambda: len(backend.attempts) >= 2, what="a second attempt")
            row = bridge.status()[0]
        gap = backend.attempts[1] - backend.attempts[0]
        assert gap >= 0.45, gap
        assert row["last_error"] == "handshake refused with HTTP 401"
        assert "backend-secret" not in json.dumps(row)


async def test_silent_backend_channel_is_dead_and_redialled(gateway: Gateway) -> None:
    async with FakeBackend() as backend:
        async with running_bridge(gateway, **envelope_client(backend.url, idle_timeout=0.3)):
            first = await backend.next_session()
            await backend.next_session(after=1)
        assert backend.closes[0] == (1000, "no data for 0.3 s: channel treated as dead")
        assert first.session_id != backend.sessions[1].session_id
