"""Limits on handshake-era HTTP sessions at `/mcp`: half-open expiry, per-client caps, oldest idle first.

Why: the SDK keeps a session for every `initialize` until it has been idle for
`http_session_idle_timeout` (30 minutes) and refuses new ones (503) at `http_session_max`.
10,100 initializes in 31 s filled every slot, and every new client got 503 for up to 30
minutes. So, in front of the SDK's transport:

- a session that sent nothing after its initialize (half-open) is closed after
  `http_session_handshake_timeout` seconds (30 s);
- one client (its address and the credential it sent) keeps at most
  `http_session_max_per_client` sessions, and all clients together `http_session_max`;
- at either cap a new session closes an idle one instead of being refused: half-open ones
  first (the oldest), then the least recently used. Only when every session in the way has a
  request in flight (an open GET stream counts) is the new one refused, 503 with Retry-After.

Sessions are learned from the `Mcp-Session-Id` of the answer that opened them, and forgotten
when the SDK no longer has them (a DELETE, its idle timeout), checked by a sweep every second.
2026-07-28 requests have no session and pass untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_nexus._sdk_seams import close_http_session, http_session_ids

logger = logging.getLogger(__name__)

ClientKey = tuple[str, str]  # (client address, a fingerprint of the Authorization header or "")


@dataclass(frozen=True)
class SessionLimits:
    max_sessions: int = 10_000
    max_per_client: int = 1000
    handshake_timeout: float = 30.0


class _Entry:
    __slots__ = ("client", "established", "in_flight", "opened")

    def __init__(self, client: ClientKey, opened: float) -> None:
        self.client = client
        self.opened = opened
        self.established = False  # a request came after the one that opened it
        self.in_flight = 1  # the opening request is still being answered


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def client_key(scope: Scope) -> ClientKey:
    client = scope.get("client")
    address = str(client[0]) if client else ""
    credential = _header(scope, b"authorization")
    fingerprint = hashlib.sha256(credential.encode("latin-1")).hexdigest()[:16] if credential else ""
    return address, fingerprint


class HttpSessionLimiter:
    """ASGI middleware for the MCP path in front of the SDK's session manager."""

    def __init__(
        self,
        app: ASGIApp,
        path: str,
        session_manager: Any,
        limits: SessionLimits,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.path = path.rstrip("/") or "/"
        self.manager = session_manager
        self.limits = limits
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._recent: OrderedDict[str, None] = OrderedDict()  # least recently used first
        self._half_open: OrderedDict[str, None] = OrderedDict()  # oldest first
        self._by_client: dict[ClientKey, OrderedDict[str, None]] = {}
        self._opening: Counter[ClientKey] = Counter()
        self._opening_total = 0
        self.closed = Counter[str]()  # why sessions were closed here: evicted, half-open, refused

    # -- bookkeeping -------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "half_open": len(self._half_open),
            "clients": len(self._by_client),
            "closed": dict(self.closed),
        }

    def _register(self, session_id: str, client: ClientKey) -> None:
        if session_id in self._entries:
            return
        self._entries[session_id] = _Entry(client, self._clock())
        self._recent[session_id] = None
        self._half_open[session_id] = None
        self._by_client.setdefault(client, OrderedDict())[session_id] = None

    def _forget(self, session_id: str) -> _Entry | None:
        entry = self._entries.pop(session_id, None)
        if entry is None:
            return None
        self._recent.pop(session_id, None)
        self._half_open.pop(session_id, None)
        mine = self._by_client.get(entry.client)
        if mine is not None:
            mine.pop(session_id, None)
            if not mine:
                del self._by_client[entry.client]
        return entry

    def _touch(self, session_id: str, entry: _Entry) -> None:
        self._recent.move_to_end(session_id)
        self._by_client[entry.client].move_to_end(session_id)
        if not entry.established:
            entry.established = True
            self._half_open.pop(session_id, None)

    def _victim(self, candidates: Iterable[str]) -> str | None:
        """The first idle half-open session among `candidates` (oldest first), else the first idle one."""
        fallback = None
        for session_id in candidates:
            entry = self._entries[session_id]
            if entry.in_flight:
                continue
            if not entry.established:
                return session_id
            if fallback is None:
                fallback = session_id
        return fallback

    def _make_room(self, client: ClientKey) -> tuple[bool, list[str]]:
        """Whether `client` may open a session now, and the sessions to close for it."""
        victims: list[str] = []
        mine = self._by_client.get(client, OrderedDict())
        if len(mine) + self._opening[client] >= self.limits.max_per_client:
            victim = self._victim(mine)
            if victim is None:
                return False, victims
            self._forget(victim)
            victims.append(victim)
        if len(self._entries) + self._opening_total >= self.limits.max_sessions:
            victim = self._victim(self._half_open) or self._victim(self._recent)
            if victim is None:
                return False, victims
            self._forget(victim)
            victims.append(victim)
        return True, victims

    async def _close(self, session_ids: list[str], reason: str) -> None:
        for session_id in session_ids:
            self.closed[reason] += 1
            with contextlib.suppress(Exception):
                await close_http_session(self.manager, session_id)

    # -- the sweep (half-open expiry, sessions the SDK ended) ------------------------------------

    async def sweep(self) -> None:
        now = self._clock()
        expired = []
        for session_id in self._half_open:
            entry = self._entries[session_id]
            if now - entry.opened < self.limits.handshake_timeout:
                break
            if not entry.in_flight:
                expired.append(session_id)
        for session_id in expired:
            self._forget(session_id)
        open_ids = http_session_ids(self.manager)
        for session_id in [s for s, e in self._entries.items() if not e.in_flight and s not in open_ids]:
            self._forget(session_id)
        if expired:
            logger.info("closing %d HTTP sessions that sent nothing after initialize", len(expired))
            await self._close(expired, "half-open")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        interval = min(1.0, self.limits.handshake_timeout / 4)

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await self.sweep()
                except Exception:  # never let one bad sweep end the limits
                    logger.exception("HTTP session sweep failed")

        task = asyncio.create_task(loop(), name="http-session-sweep")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- ASGI ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        version = _header(scope, b"mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)  # 2026-07-28: no session
            return
        session_id = _header(scope, b"mcp-session-id")
        if session_id is None:
            await self._open(scope, receive, send)
            return
        entry = self._entries.get(session_id)
        if entry is None:
            await self.app(scope, receive, send)
            return
        self._touch(session_id, entry)
        entry.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            entry.in_flight -= 1
            if session_id in self._entries:
                self._touch(session_id, entry)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = client_key(scope)
        admitted, victims = self._make_room(client)
        if not admitted:
            self.closed["refused"] += 1
            await self._close(victims, "evicted")
            await _refuse(send, self.limits.handshake_timeout)
            return
        self._opening[client] += 1
        self._opening_total += 1
        opened: str | None = None
        answered = False

        async def watch(message: Message) -> None:
            nonlocal opened, answered
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                entry = self._entries.get(opened) if opened is not None else None
                if entry is not None and not answered:
                    # The answer is complete: the session is idle from now, though the SDK's task
                    # may take a moment to return (the client's next initialize must not find it busy).
                    answered = True
                    entry.in_flight -= 1
            elif message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", ()):
                    if key.lower() == b"mcp-session-id":
                        opened = value.decode("latin-1")
                        # Known before the answer leaves: the client's next request may come at once.
                        self._register(opened, client)
                        self._opening[client] -= 1
                        self._opening_total -= 1
                        break
            await send(message)

        try:
            if victims:
                logger.info("HTTP session limit: closing %d idle session(s) for a new one", len(victims))
                await self._close(victims, "evicted")
            await self.app(scope, receive, watch)
        finally:
            if opened is None:
                self._opening[client] -= 1
                self._opening_total -= 1
            else:
                entry = self._entries.get(opened)
                if entry is not None:
                    if not answered:
                        entry.in_flight -= 1
                    if opened not in http_session_ids(self.manager):
                        self._forget(opened)  # refused or failed: the SDK discarded it
            if self._opening[client] <= 0:
                del self._opening[client]


async def _refuse(send: Send, retry_after: float) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32603,
                "message": "Too many open sessions: every session in the way has a request in flight "
                "(gateway.http_session_max, gateway.http_session_max_per_client)",
            },
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(max(1, int(retry_after))).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
