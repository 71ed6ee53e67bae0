"""What an HTTP or SSE server sends unasked costs the gateway a bounded share of a core, as a stdio server's does.

The SDK's streamable-HTTP and SSE clients parse every event a server sends and put it on a
stream the session's dispatcher reads; the dispatcher starts a task per notification. A
server writing notifications on its GET stream without end kept the gateway at a full core
(measured: 105% of a core through a 2.5 s flood, tests/robustness/test_notification_flood_budget.py)
and relayed each log record to whoever had a call in flight there.

This stream sits between the transport and the dispatcher and charges each unasked message
(a notification, or a request of the server's own) to the server's `NotificationBudget`
(`limits.notification_burst` at once, `limits.notifications_per_second` on average). Past
the budget, the dispatcher's next receive waits until the average is back within it. The
transport's stream holds nothing (the SDK makes it with room for none), so the transport's
readers wait too: the server's events stay in its socket, and what the gateway reads of them
costs no more than the budget allows. Answers to the gateway's own requests are never
charged; while a pause lasts (about 1/rate of a second per message over the budget) they
wait for the same receive.
"""

from __future__ import annotations

import asyncio
import contextvars
from types import TracebackType
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from mcp_nexus.config.schema import UpstreamLimits
from mcp_nexus.upstream.notification_budget import NotificationBudget


class ReceiveStream(Protocol):
    """What the SDK's transports hand the dispatcher (an anyio receive stream, duck-typed)."""

    async def receive(self) -> Any: ...

    async def aclose(self) -> None: ...


class BudgetedReceiveStream:
    """`inner`, with each unasked message charged to `budget`; receiving waits while it is over."""

    def __init__(
        self, inner: ReceiveStream, server: str, limits: UpstreamLimits, *, answers_apart: bool = True
    ) -> None:
        """`answers_apart`: the server's answers come on streams of their own (streamable HTTP),
        not behind its notifications on one stream (HTTP+SSE)."""
        self._inner = inner
        self._open = asyncio.Event()
        self._open.set()
        self.budget = NotificationBudget(
            server,
            limits.notifications_per_second,
            limits.notification_burst,
            self,
            answers="its answers come on their own streams"
            if answers_apart
            else "its answers wait behind them",
        )

    # -- what the budget pauses and resumes ---------------------------------------------------

    def pause_reading(self) -> None:
        self._open.clear()

    def resume_reading(self) -> None:
        self._open.set()

    # -- what the dispatcher reads ------------------------------------------------------------

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last item, when the transport's stream keeps one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        if not self._open.is_set():
            await self._open.wait()
        item = await self._inner.receive()
        if isinstance(item, SessionMessage) and isinstance(
            item.message, types.JSONRPCNotification | types.JSONRPCRequest
        ):
            self.budget.spend()
        return item

    def __aiter__(self) -> BudgetedReceiveStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self.budget.release()  # nothing waits on a pause of a stream that is closing
        self._open.set()
        await self._inner.aclose()

    async def __aenter__(self) -> BudgetedReceiveStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
