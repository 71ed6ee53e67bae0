"""A fake Xiaozhi MCP endpoint, written from the documented protocol (../shared/REFERENCE.md section 4).

A real WebSocket server on 127.0.0.1. Tools connect to `ws://127.0.0.1:<port>/mcp/?token=<t>`;
the endpoint is the MCP client. For each accepted connection it sends `initialize` with id 0,
`notifications/initialized` (at once, or after the answer, as `initialized_after_answer` says),
then lists the tools following `nextCursor`, and exposes the session to the test, which can
ping, call tools (with `serialNumber`), close with any code, or drop the TCP connection.

What the endpoint enforces, as documented: a missing or unknown token is closed with 1008; a
second connection with the same token replaces the first; a handshake left unanswered for
`handshake_timeout` seconds is closed with 4004. It also records what a test needs to check
the bridge's manners: every connection attempt, how many of one client's sockets were open at
once per token, and whether any frame it received was binary.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

BRIDGE_AGENT = "mcp-nexus"  # what the bridge's User-Agent contains; other clients are "intruders"


@dataclass
class Attempt:
    at: float
    token: str | None
    user_agent: str


@dataclass
class FakeSession:
    """One accepted connection after its handshake, as the test drives it."""

    ws: ServerConnection
    token: str
    string_ids: bool
    initialize_result: dict[str, Any] | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    pages: int = 0
    notifications: list[dict[str, Any]] = field(default_factory=list)
    received: list[Any] = field(default_factory=list)  # every decoded message, in order
    frames: list[str] = field(default_factory=list)  # every frame as sent, before decoding
    undecodable: list[str] = field(default_factory=list)  # frames that were not JSON at all
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    _pending: dict[Any, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _serials: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def next_id(self) -> int | str:
        number = next(self._ids)
        return f"xz-{number}" if self.string_ids else number

    async def send_raw(self, frame: str | bytes) -> None:
        await self.ws.send(frame)

    async def start_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        request_id: Any = None,
        binary: bool = False,
    ) -> tuple[Any, asyncio.Future[dict[str, Any]]]:
        """Send a request (with a trailing newline, as text or binary); the future gets its response."""
        rid = self.next_id() if request_id is None else request_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        frame = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}) + "\n"
        await self.ws.send(frame.encode() if binary else frame)
        return rid, future

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        request_id: Any = None,
        timeout: float = 10.0,
        binary: bool = False,
    ) -> dict[str, Any]:
        """Send a request and return the whole response (result or error)."""
        rid, future = await self.start_request(method, params, request_id=request_id, binary=binary)
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(rid, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.ws.send(json.dumps(message))

    async def ping(self) -> dict[str, Any]:
        return await self.request("ping")

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 15.0) -> dict[str, Any]:
        """A tools/call as the endpoint sends it: integer (or string) id and an extra serialNumber."""
        params = {"name": name, "arguments": arguments, "serialNumber": next(self._serials)}
        return await self.request("tools/call", params, timeout=timeout)

    async def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        self.pages = 0
        while True:
            response = await self.request("tools/list", params)
            result = response["result"]
            tools.extend(result["tools"])
            self.pages += 1
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
            params = {"cursor": cursor}

    async def close(self, code: int = 1000, reason: str = "") -> None:
        await self.ws.close(code, reason)

    def drop(self) -> None:
        """Cut the TCP connection without a close frame (a network failure)."""
        self.ws.transport.abort()

    def fail_pending(self) -> None:
        """The socket is gone: whoever waits for an answer learns it now."""
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("the connection closed before the answer"))

    def deliver(self, message: Any) -> None:
        self.received.append(message)
        if not isinstance(message, dict):
            return
        if "method" in message:
            self.notifications.append(message)
            return
        future = self._pending.get(message.get("id"))
        if future is not None and not future.done():
            future.set_result(message)


class FakeXiaozhiEndpoint:
    def __init__(
        self,
        tokens: set[str] | None = None,
        *,
        string_ids: bool = False,
        initialized_after_answer: bool = False,
        handshake_timeout: float = 10.0,
        list_on_connect: bool = True,
    ) -> None:
        self.tokens = tokens if tokens is not None else {"good-token"}
        self.string_ids = string_ids
        self.initialized_after_answer = initialized_after_answer
        self.handshake_timeout = handshake_timeout
        self.list_on_connect = list_on_connect
        self.refuse_next: list[tuple[int, str]] = []  # close codes for the next connections, in order
        self.attempts: list[Attempt] = []
        self.sessions: list[FakeSession] = []
        self.binary_frames = 0
        self.text_frames = 0
        self.max_bridge_sockets: dict[str, int] = defaultdict(int)
        self._open: dict[str, list[ServerConnection]] = defaultdict(list)
        self._bridge_open: dict[str, int] = defaultdict(int)
        self._live: dict[str, FakeSession] = {}
        self._new_session = asyncio.Condition()
        self._server: Server | None = None
        self._port = 0
        self._background: set[asyncio.Task[None]] = set()

    # -- lifetime ----------------------------------------------------------------------------

    async def __aenter__(self) -> FakeXiaozhiEndpoint:
        self._server = await serve(self._handle, "127.0.0.1", 0, ping_interval=None)
        self._port = int(next(iter(self._server.sockets)).getsockname()[1])
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close(close_connections=True)
        await asyncio.wait_for(self._server.wait_closed(), 10)

    @property
    def port(self) -> int:
        return self._port

    def url(self, token: str = "good-token") -> str:
        return f"ws://127.0.0.1:{self.port}/mcp/?token={token}"

    # -- what tests wait for -----------------------------------------------------------------

    async def next_session(
        self, token: str = "good-token", *, after: int = 0, timeout: float = 10.0
    ) -> FakeSession:
        """The first ready session for `token` beyond the first `after` ones."""

        def found() -> FakeSession | None:
            mine = [s for s in self.sessions if s.token == token]
            return mine[after] if len(mine) > after else None

        async with self._new_session:
            await asyncio.wait_for(self._new_session.wait_for(found), timeout)
        session = found()
        assert session is not None
        return session

    def bridge_attempts(self, token: str | None = None) -> list[Attempt]:
        return [
            a for a in self.attempts if BRIDGE_AGENT in a.user_agent and (token is None or a.token == token)
        ]

    # -- the endpoint ------------------------------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        request = ws.request
        assert request is not None
        tokens = parse_qs(urlsplit(request.path).query).get("token")
        token = tokens[0] if tokens else None
        agent = request.headers.get("User-Agent", "")
        self.attempts.append(Attempt(time.monotonic(), token, agent))
        if token is None or token not in self.tokens:
            await ws.close(1008, "invalid token")
            return
        if self.refuse_next:
            code, reason = self.refuse_next.pop(0)
            await ws.close(code, reason)
            return
        is_bridge = BRIDGE_AGENT in agent
        if is_bridge:
            self._bridge_open[token] += 1
            self.max_bridge_sockets[token] = max(self.max_bridge_sockets[token], self._bridge_open[token])
        previous = self._live.get(token)
        session = FakeSession(ws, token, self.string_ids)
        self._live[token] = session
        if previous is not None:  # one tool socket per token: the newcomer replaces it
            # In the background: a hung previous peer must not delay the newcomer's handshake.
            closing = asyncio.create_task(
                previous.ws.close(1000, "replaced by a new connection with the same token")
            )
            self._background.add(closing)
            closing.add_done_callback(self._background.discard)
        reader = asyncio.create_task(self._read(session))
        try:
            if not await self._handshake(session):
                await ws.close(4004, "handshake timeout")
                return
            if self.list_on_connect:
                session.tools = await session.list_tools()
            async with self._new_session:
                self.sessions.append(session)
                self._new_session.notify_all()
            await ws.wait_closed()
        except (ConnectionClosed, ConnectionError, TimeoutError):
            pass
        finally:
            if is_bridge:
                self._bridge_open[token] -= 1
            if self._live.get(token) is session:
                del self._live[token]
            session.closed.set()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _handshake(self, session: FakeSession) -> bool:
        params = {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "xz-mcp-broker", "version": "0.0.1"},
        }
        request_id = "xz-0" if self.string_ids else 0
        _, answered = await session.start_request("initialize", params, request_id=request_id)
        if self.initialized_after_answer:
            try:
                response = await asyncio.wait_for(answered, self.handshake_timeout)
            except TimeoutError:
                return False
            await session.notify("notifications/initialized")
        else:
            # Some endpoints do not wait: initialized follows initialize before any answer.
            await session.notify("notifications/initialized")
            try:
                response = await asyncio.wait_for(answered, self.handshake_timeout)
            except TimeoutError:
                return False
        session.initialize_result = response.get("result")
        return True

    async def _read(self, session: FakeSession) -> None:
        try:
            async for frame in session.ws:
                if isinstance(frame, bytes):
                    self.binary_frames += 1
                    frame = frame.decode()
                else:
                    self.text_frames += 1
                session.frames.append(frame)
                try:
                    message = json.loads(frame)
                except ValueError:  # a bridge bug: keep reading, the test sees it in `undecodable`
                    session.undecodable.append(frame)
                    continue
                session.deliver(message)
        except ConnectionClosed:
            pass
        finally:
            session.fail_pending()
