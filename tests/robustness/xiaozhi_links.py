"""The two Xiaozhi links of one `nexus serve` process, driven from the peer's side.

Endpoint link: Nexus dials a fake endpoint (support/fake_xiaozhi.py); the test speaks as the
endpoint. Envelope server: the test dials Nexus as a device and wraps JSON-RPC in
`{"session_id", "type": "mcp", "payload"}`. Every frame Nexus sends is kept raw and judged
strictly (no bare NaN, valid UTF-8 JSON, well-formed JSON-RPC).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from robustness.gateways import HttpGateway
from robustness.wire import NotStrictJson, id_key, is_answer, shape_problem, strict_loads
from support.fake_xiaozhi import FakeSession, FakeXiaozhiEndpoint

ENDPOINT_TOKEN = "robust-endpoint-token-0123456789"
ENVELOPE_TOKEN = "robust-envelope-token-0123456789"
HELLO = {"type": "hello", "version": 1, "transport": "websocket", "features": {"mcp": True}}
# Fast redials: a link that a test broke comes back quickly for the next test.
FAST = {"backoff_min": 0.05, "backoff_max": 0.4, "backoff_jitter": 0.1, "ping_interval": 5}


def judge_frames(frames: Sequence[str | bytes]) -> tuple[list[dict[str, Any]], list[str]]:
    """Strictly parsed messages and the problems found in `frames`."""
    messages: list[dict[str, Any]] = []
    problems: list[str] = []
    for frame in frames:
        try:
            message = strict_loads(frame)
        except NotStrictJson as exc:
            problems.append(f"not valid JSON ({exc}): {frame[:200]!r}")
            continue
        problem = shape_problem(message)
        if problem:
            problems.append(f"{problem}: {str(message)[:200]}")
        messages.append(message)
    return messages, problems


def as_frame(raw: bytes) -> str | bytes:
    """A text frame when the bytes are UTF-8 (text frames must be), else a binary frame."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


@dataclass
class Stack:
    fake: FakeXiaozhiEndpoint
    gateway: HttpGateway
    envelope_port: int

    async def endpoint_session(self, timeout: float = 20.0) -> FakeSession:
        """The endpoint's live session with the bridge (a new one after the bridge redialled)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for session in reversed(self.fake.sessions):
                if not session.closed.is_set() and session.token == ENDPOINT_TOKEN:
                    return session
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(
                    f"no live endpoint session within {timeout} s\n{self.gateway.log_tail()}"
                )
            await asyncio.sleep(0.05)


def closed_note(session: FakeSession) -> str:
    return f"the endpoint link closed: code {session.ws.close_code} {session.ws.close_reason!r}"


async def frame_with_id(
    frames: list[Any], start: int, request_id: Any, timeout: float = 10.0, closed: Any = None
) -> dict[str, Any]:
    """The first strictly-parsed answer in `frames[start:]` that carries `request_id`.

    `closed()` says the link is gone: then no answer can come, so fail at once.
    """
    key = id_key(request_id)
    deadline = asyncio.get_running_loop().time() + timeout
    gone_since: float | None = None
    while True:
        for frame in frames[start:]:
            message = _answer_in(frame)
            if message is not None and id_key(message.get("id")) == key:
                return message
        now = asyncio.get_running_loop().time()
        if closed is not None and closed():
            gone_since = gone_since or now
            if now - gone_since > 0.2:  # what was sent before the close has been read by now
                raise AssertionError(f"no answer with id {key}: the link closed")
        elif now > deadline:
            raise AssertionError(f"no answer with id {key} within {timeout} s")
        await asyncio.sleep(0.02)


def _answer_in(frame: Any) -> dict[str, Any] | None:
    """The JSON-RPC answer a frame carries (bare, or as an envelope's payload), if any."""
    try:
        message = strict_loads(frame)
    except NotStrictJson:
        return None
    if isinstance(message, dict) and "payload" in message:
        message = message["payload"]
    return dict(message) if is_answer(message) else None


@dataclass
class Device:
    """The test's side of one envelope-server session: raw frames in, every frame out recorded."""

    ws: ClientConnection
    session_id: str
    frames: list[str | bytes] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(10_000))
    reader: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, port: int) -> Device:
        headers = {
            "Authorization": f"Bearer {ENVELOPE_TOKEN}",
            "Device-Id": "aa:bb:cc:dd:ee:ff",
            "Client-Id": "robustness-tests",
            "Protocol-Version": "1",
        }
        ws = await connect(
            f"ws://127.0.0.1:{port}/xiaozhi/v1/", additional_headers=headers, max_size=None, close_timeout=1
        )
        await ws.send(json.dumps(HELLO))
        hello = json.loads(await asyncio.wait_for(ws.recv(), 10))
        device = cls(ws, hello["session_id"])
        device.reader = asyncio.create_task(device._read())
        return device

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.ws:
                self.frames.append(frame)

    @property
    def closed(self) -> bool:
        return self.ws.close_code is not None

    def closed_note(self) -> str:
        return f"the envelope connection closed: code {self.ws.close_code} {self.ws.close_reason!r}"

    def envelope(self, payload_raw: bytes) -> bytes:
        return (
            b'{"session_id":"' + self.session_id.encode() + b'","type":"mcp","payload":' + payload_raw + b"}"
        )

    async def send_payload_raw(self, payload_raw: bytes) -> None:
        await self.ws.send(as_frame(self.envelope(payload_raw)))

    async def request(self, method: str, params: Any = None, timeout: float = 10.0) -> dict[str, Any]:
        request_id = next(self.ids)
        start = len(self.frames)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_payload_raw(json.dumps(message).encode())
        return await frame_with_id(self.frames, start, request_id, timeout, closed=lambda: self.closed)

    def payloads_since(self, start: int) -> tuple[list[dict[str, Any]], list[str]]:
        envelopes, problems = judge_frames(self.frames[start:])
        payloads: list[dict[str, Any]] = []
        for envelope in envelopes:
            if envelope.get("type") == "mcp" and isinstance(envelope.get("payload"), dict):
                payloads.append(envelope["payload"])
        # the envelopes themselves are not JSON-RPC: only their payloads' shapes matter
        problems = [p for p in problems if p.startswith("not valid JSON")]
        problems += [f"{shape_problem(p)}: {str(p)[:200]}" for p in payloads if shape_problem(p)]
        return payloads, problems

    async def close(self) -> None:
        await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader
