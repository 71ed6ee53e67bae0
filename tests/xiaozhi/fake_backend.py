"""A fake device backend (the server side of the device protocol) for the envelope client tests.

It checks the device headers, reads the device's hello, answers (or not, or badly) with its
own hello, and then lets the test send MCP requests inside `type: mcp` envelopes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response


@dataclass
class BackendSession:
    ws: ServerConnection
    headers: Headers
    hello: dict[str, Any]
    session_id: str
    inbox: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)

    async def send_mcp(self, payload: dict[str, Any]) -> None:
        await self.ws.send(json.dumps({"session_id": self.session_id, "type": "mcp", "payload": payload}))

    async def request(
        self, request_id: Any, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        await self.send_mcp({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        return await self.next_envelope()

    async def next_envelope(self, timeout: float = 10.0) -> dict[str, Any]:
        return await asyncio.wait_for(self.inbox.get(), timeout)


class FakeBackend:
    def __init__(self, token: str = "backend-secret", *, hello: str = "good") -> None:
        self.token = token
        self.hello_mode = hello  # "good", "silent" (never answers), "no-session" (answers without session_id)
        self.attempts: list[float] = []
        self.sessions: list[BackendSession] = []
        self.closes: list[tuple[int | None, str | None]] = []
        self._new = asyncio.Condition()
        self._server: Server | None = None

    async def __aenter__(self) -> FakeBackend:
        self._server = await serve(
            self._handle, "127.0.0.1", 0, process_request=self._check, ping_interval=None
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close(close_connections=True)
        await asyncio.wait_for(self._server.wait_closed(), 10)

    @property
    def url(self) -> str:
        assert self._server is not None
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}/xiaozhi/v1/"

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        self.attempts.append(time.monotonic())
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return connection.respond(HTTPStatus.UNAUTHORIZED, "bad token\n")
        return None

    async def next_session(self, after: int = 0, timeout: float = 10.0) -> BackendSession:
        async with self._new:
            await asyncio.wait_for(self._new.wait_for(lambda: len(self.sessions) > after), timeout)
        return self.sessions[after]

    async def _handle(self, ws: ServerConnection) -> None:
        try:
            hello = json.loads(await ws.recv())
            if self.hello_mode == "silent":
                await ws.wait_closed()
                return
            answer: dict[str, Any] = {"type": "hello", "transport": "websocket", "version": 1}
            session_id = f"sess-{len(self.attempts)}"
            if self.hello_mode != "no-session":
                answer["session_id"] = session_id
            await ws.send(json.dumps(answer))
            assert ws.request is not None
            session = BackendSession(ws, ws.request.headers, hello, session_id)
            async with self._new:
                self.sessions.append(session)
                self._new.notify_all()
            async for frame in ws:
                session.inbox.put_nowait(json.loads(frame))
        except ConnectionClosed:
            pass
        finally:
            with contextlib.suppress(Exception):
                await ws.wait_closed()
            self.closes.append((ws.close_code, ws.close_reason))
