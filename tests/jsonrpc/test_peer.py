"""The JSON-RPC core: two peers back to back, and every kind of malformed frame."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcp_nexus.jsonrpc import JsonRpcPeer, PeerOptions, RawResult


class Wire:
    """Frames written by a peer, for the test to read."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, frame: bytes) -> None:
        self.frames.append(frame)

    def messages(self) -> list[Any]:
        return [json.loads(frame) for frame in self.frames]


def linked() -> tuple[JsonRpcPeer, JsonRpcPeer]:
    """Two peers whose writes feed each other."""
    holder: dict[str, JsonRpcPeer] = {}

    def to(name: str) -> Any:
        def write(frame: bytes) -> None:
            asyncio.get_running_loop().create_task(holder[name].feed(frame))

        return write

    holder["a"] = JsonRpcPeer(to("b"), PeerOptions(name="a"))
    holder["b"] = JsonRpcPeer(to("a"), PeerOptions(name="b"))
    return holder["a"], holder["b"]


async def test_progress_is_delivered_in_order_and_before_the_answer() -> None:
    """A relay passes each progress on with an await of its own (slow ones here, the first
    slowest): all of them, in order, must reach the caller before the request returns."""
    a, b = linked()

    async def on_request(ctx: Any, method: str, params: Any) -> Any:
        for step in (1, 2, 3):
            await ctx.progress(step, 3, f"step {step}")
        return {"done": True}

    async def on_notify(ctx: Any, method: str, params: Any) -> None:
        return None

    b.serve(on_request, on_notify)
    delivered: list[float] = []

    async def slow_relay(value: float, total: float | None, message: str | None) -> None:
        await asyncio.sleep(0.05 * (4 - value))
        delivered.append(value)

    result = await a.send_raw_request("work", {}, {"on_progress": slow_relay})
    assert result == {"done": True}
    assert delivered == [1, 2, 3]


async def test_request_result_error_and_progress() -> None:
    a, b = linked()
    seen: list[float] = []

    async def on_request(ctx: Any, method: str, params: Any) -> Any:
        if method == "fail":
            raise MCPError(-32000, "nope", {"why": 1})
        if method == "raw":
            return RawResult(b'{"x":1}')
        await ctx.progress(0.5, 1.0, "half")
        return {"echo": params}

    async def on_notify(ctx: Any, method: str, params: Any) -> None:
        return None

    b.serve(on_request, on_notify)

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    assert await a.send_raw_request("echo", {"k": 1}, {"on_progress": progress}) == {
        "echo": {"k": 1, "_meta": {"progressToken": 1}}
    }
    await asyncio.sleep(0)
    assert seen == [0.5]
    assert await a.send_raw_request("raw", None) == {"x": 1}
    with pytest.raises(MCPError) as caught:
        await a.send_raw_request("fail", None)
    assert caught.value.error.code == -32000 and caught.value.error.data == {"why": 1}


async def test_timeout_sends_cancelled_and_cancel_stops_the_handler() -> None:
    a, b = linked()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def on_request(ctx: Any, method: str, params: Any) -> Any:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    b.serve(on_request, lambda *args: asyncio.sleep(0))
    with pytest.raises(MCPError) as caught:
        await a.send_raw_request("slow", None, {"timeout": 0.05})
    assert caught.value.error.code == -32001
    await asyncio.wait_for(cancelled.wait(), 2)
    assert b.in_flight == 0


async def test_close_fails_pending_requests() -> None:
    wire = Wire()
    peer = JsonRpcPeer(wire.write)
    pending = asyncio.ensure_future(peer.send_raw_request("x", None))
    await asyncio.sleep(0)
    peer.close("gone")
    with pytest.raises(MCPError, match="gone"):
        await pending


@pytest.mark.parametrize(
    ("frame", "code", "has_id"),
    [
        (b"not json", -32700, False),
        (b"[" * 100_000 + b"]" * 100_000, -32700, False),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}', -32602, True),
        (b'{"jsonrpc":"2.0","id":{},"method":"m"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":[1],"method":"m"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"m"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":true,"method":"m"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":null,"method":"m"}', -32600, False),
        (b'{"jsonrpc":"1.0","id":3,"method":"m"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":3}', -32600, False),
        (b"{}", -32600, False),
        (b'[{"jsonrpc":"2.0","id":3,"method":"m"}]', -32600, False),
        (b'{"jsonrpc":"2.0","id":3,"method":7}', -32600, True),
        (b'{"jsonrpc":"2.0","id":NaN,"method":"m"}', -32700, False),
        (b"\xff\xfe{}", -32700, False),
    ],
)
async def test_malformed_frames_get_one_clear_error(frame: bytes, code: int, has_id: bool) -> None:
    wire = Wire()
    peer = JsonRpcPeer(wire.write)
    peer.serve(lambda ctx, m, p: asyncio.sleep(0, {}), lambda *a: asyncio.sleep(0))
    await peer.feed(frame)
    (answer,) = wire.messages()
    assert answer["error"]["code"] == code
    assert (answer["id"] is not None) == has_id
    assert len(answer["error"]["message"]) < 200  # a short message, never a model dump


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"a":1}}}',
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[1]}}',
        b'{"jsonrpc":"2.0","id":99,"result":{}}',
        b'{"jsonrpc":"2.0","id":99,"result":1,"error":{}}',
    ],
)
async def test_broken_notifications_and_stray_responses_are_dropped(frame: bytes) -> None:
    wire = Wire()
    peer = JsonRpcPeer(wire.write)
    peer.serve(lambda ctx, m, p: asyncio.sleep(0, {}), lambda *a: asyncio.sleep(0))
    await peer.feed(frame)
    await asyncio.sleep(0)
    assert wire.frames == []


async def test_lone_surrogates_are_answered_with_valid_json() -> None:
    """A result holding a lone surrogate is escaped; params holding one are refused at once (-32602
    naming where), never handed on: a strict peer further on would drop them and the caller wait."""
    wire = Wire()
    peer = JsonRpcPeer(wire.write)
    handled = []

    async def echo(ctx: Any, method: str, params: Any) -> Any:
        handled.append(params)
        return {"text": "\ud800x"}

    peer.serve(echo, lambda *a: asyncio.sleep(0))
    await peer.feed(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"s":"plain"}}')
    await peer.feed(b'{"jsonrpc":"2.0","id":2,"method":"echo","params":{"a":{"s":["ok","\\ud800x"]}}}')
    for _ in range(3):
        await asyncio.sleep(0)
    answers = {
        message["id"]: message for message in (json.loads(frame.decode("utf-8")) for frame in wire.frames)
    }
    assert answers[1]["result"]["text"] == "\ud800x"
    assert answers[2]["error"]["code"] == -32602
    assert answers[2]["error"]["data"]["path"] == "a.s[1]"
    assert "a.s[1] contains a lone UTF-16 surrogate (\\ud800)" in answers[2]["error"]["message"]
    assert handled == [{"s": "plain"}]


async def test_handler_bug_is_an_internal_error_naming_only_the_type() -> None:
    wire = Wire()
    peer = JsonRpcPeer(wire.write)

    async def broken(ctx: Any, method: str, params: Any) -> Any:
        raise RuntimeError("secret=hunter2")

    peer.serve(broken, lambda *a: asyncio.sleep(0))
    await peer.feed(b'{"jsonrpc":"2.0","id":"a","method":"m"}')
    for _ in range(3):
        await asyncio.sleep(0)
    (answer,) = wire.messages()
    assert answer["id"] == "a" and answer["error"]["code"] == -32603
    assert "hunter2" not in answer["error"]["message"]
