"""An HTTP or SSE server's unasked messages are read within its notification budget; answers are not charged.

The whole path, with a real flooding HTTP server behind a real gateway, is in
tests/robustness/test_notification_flood_budget.py[...-http].
"""

from __future__ import annotations

import asyncio
import contextvars

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from mcp_nexus.config.schema import UpstreamLimits
from mcp_nexus.upstream.budgeted_stream import BudgetedReceiveStream


def notification(n: int) -> SessionMessage:
    return SessionMessage(
        types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"n": n})
    )


def answer(n: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=n, result={}))


def server_request(n: int) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=f"s{n}", method="roots/list"))


async def test_past_the_burst_the_next_receive_waits_and_answers_cost_nothing() -> None:
    send, receive = anyio.create_memory_object_stream[object](100)
    stream = BudgetedReceiveStream(
        receive, "flood", UpstreamLimits(notification_burst=3, notifications_per_second=20)
    )
    for n in range(10):
        await send.send(answer(n))  # answers to our requests: never charged
    for _ in range(10):
        assert isinstance((await stream.receive()).message, types.JSONRPCResponse)
    assert not stream.budget.paused and stream.budget.episodes == 0
    await send.send(notification(0))
    await send.send(server_request(1))  # a request of the server's own is unasked too
    await send.send(notification(2))
    await send.send(notification(3))
    for _ in range(4):
        await stream.receive()
    assert stream.budget.paused and stream.budget.episodes == 1  # one over the burst of 3
    await send.send(answer(99))
    started = asyncio.get_running_loop().time()
    item = await stream.receive()  # waits out the debt: 1 token at 20 a second, about 0.05 s
    waited = asyncio.get_running_loop().time() - started
    assert isinstance(item.message, types.JSONRPCResponse) and 0.03 <= waited < 1.0, waited
    assert not stream.budget.paused
    await stream.aclose()


async def test_it_ends_as_the_stream_ends_and_keeps_the_senders_context() -> None:
    send, receive = anyio.create_memory_object_stream[object](10)

    class WithContext:  # the SDK's own stream keeps the sender's context this way
        def __init__(self) -> None:
            self.last_context: contextvars.Context | None = None

        async def receive(self) -> object:
            self.last_context = contextvars.copy_context()
            return await receive.receive()

        async def aclose(self) -> None:
            await receive.aclose()

    inner = WithContext()
    stream = BudgetedReceiveStream(inner, "s", UpstreamLimits())
    await send.send(notification(1))
    await send.send(ValueError("a transport error passes as it is"))
    await send.aclose()
    async with stream:
        items = [item async for item in stream]
        assert stream.last_context is inner.last_context is not None
    assert isinstance(items[0], SessionMessage) and isinstance(items[1], ValueError)
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()
