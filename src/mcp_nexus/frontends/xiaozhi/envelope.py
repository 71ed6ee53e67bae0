"""The device protocol's framing: a `hello` exchange, then MCP inside `{"session_id", "type": "mcp", "payload"}`.

Shared by both roles (Nexus listening for peers, Nexus dialling a backend as a device). In
both, Nexus answers MCP requests with the device rules: numeric ids only, notifications
ignored, tools/list pages capped (~8000 bytes) with `nextCursor` naming the next tool, and a
channel with no incoming data for `idle_timeout` (120 s) treated as dead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from websockets.asyncio.connection import Connection
from websockets.exceptions import ConnectionClosed

from mcp_nexus.frontends.xiaozhi.protocol import Send, ToolService, encode
from mcp_nexus.jsonrpc import ParseError, decode

logger = logging.getLogger(__name__)

HELLO_VERSION = 1
CLOSE_PROTOCOL_ERROR = 1002
CLOSE_NORMAL = 1000


class HelloError(ValueError):
    """A hello that does not open an MCP session; the message says what is wrong."""


def device_hello() -> dict[str, Any]:
    """What a device sends first (audio parameters included: backends expect them)."""
    return {
        "type": "hello",
        "version": HELLO_VERSION,
        "transport": "websocket",
        "features": {"mcp": True},
        "audio_params": {"format": "opus", "sample_rate": 16000, "channels": 1, "frame_duration": 60},
    }


def server_hello(session_id: str) -> dict[str, Any]:
    return {
        "type": "hello",
        "version": HELLO_VERSION,
        "transport": "websocket",
        "session_id": session_id,
        "audio_params": {"format": "opus", "sample_rate": 24000, "channels": 1, "frame_duration": 60},
    }


def parse_message(frame: str | bytes) -> dict[str, Any]:
    """One JSON object from a text frame; HelloError-free, ValueError names what is wrong."""
    if isinstance(frame, bytes):
        raise ValueError("a binary frame (audio) where JSON was expected")
    try:
        message = decode(frame.encode("utf-8", "surrogatepass"))
    except ParseError as exc:
        raise ValueError(f"not valid JSON ({exc.message}): {frame[:80]!r}") from exc
    if not isinstance(message, dict):
        raise ValueError("not a JSON object")
    if not isinstance(message.get("type"), str):
        raise ValueError("no 'type'")
    return message


def check_device_hello(message: dict[str, Any]) -> None:
    if message.get("type") != "hello":
        raise HelloError(f"expected a hello first, got type {message.get('type')!r}")
    features = message.get("features")
    if not isinstance(features, dict) or features.get("mcp") is not True:
        raise HelloError("the hello does not declare features.mcp: this server only speaks MCP")
    transport = message.get("transport", "websocket")
    if transport != "websocket":
        raise HelloError(f"the hello asks for transport {transport!r}; only 'websocket' is served")


def check_server_hello(message: dict[str, Any]) -> str:
    """The session id of a backend's hello."""
    if message.get("type") != "hello":
        raise HelloError(f"expected the server's hello, got type {message.get('type')!r}")
    transport = message.get("transport", "websocket")
    if transport != "websocket":
        raise HelloError(f"the server's hello names transport {transport!r}, not 'websocket'")
    session_id = message.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise HelloError("the server's hello has no session_id")
    return session_id


def envelope_sender(ws: Connection, session_id: str) -> Send:
    prefix = encode({"session_id": session_id, "type": "mcp"})[:-1] + ',"payload":'

    async def send(payload: bytes) -> None:
        with contextlib.suppress(ConnectionClosed):  # the peer is gone: nobody to answer
            await ws.send(prefix + payload.decode("utf-8") + "}")

    return send


async def serve_envelopes(
    ws: Connection, service: ToolService, session_id: str, idle_timeout: float, label: str
) -> str | None:
    """Answer `type: mcp` messages until the channel closes; returns our own reason when we closed it."""
    while True:
        try:
            frame = await asyncio.wait_for(ws.recv(), idle_timeout)
        except TimeoutError:
            reason = f"no data for {idle_timeout:g} s: channel treated as dead"
            logger.warning("%s: %s", label, reason)
            await ws.close(CLOSE_NORMAL, reason)
            return reason
        except ConnectionClosed:
            return None
        if isinstance(frame, bytes):
            continue  # audio: not ours to handle
        try:
            message = parse_message(frame)
        except ValueError as exc:
            logger.warning("%s: ignored a malformed message: %s", label, exc)
            continue
        kind = message["type"]
        if kind == "mcp":
            payload = message.get("payload")
            sent_session = message.get("session_id")
            if sent_session not in (None, "", session_id):
                logger.warning("%s: ignored an mcp message for another session %r", label, sent_session)
            elif not isinstance(payload, dict):
                logger.warning("%s: ignored an mcp message without an object 'payload'", label)
            else:
                await service.receive(payload)
        elif kind == "goodbye":
            await ws.close(CLOSE_NORMAL, "goodbye")
            return "goodbye"
        else:
            logger.debug("%s: ignored a %r message", label, kind)
