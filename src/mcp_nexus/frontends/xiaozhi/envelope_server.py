"""Envelope server role: Nexus listens, peers connect as devices do and call the aggregated tools.

A peer opens a WebSocket with `Authorization: Bearer <token>`, `Device-Id` and `Client-Id`,
sends a hello declaring `features.mcp`, gets a hello with a `session_id` back, then sends MCP
requests inside `type: mcp` envelopes. A bad or missing token is refused at the HTTP
handshake (401), before any WebSocket exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import uuid
from http import HTTPStatus
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from mcp_nexus.config.xiaozhi import EnvelopeServerSettings
from mcp_nexus.frontends.xiaozhi.connection import MAX_FRAME_BYTES, websocket_logger
from mcp_nexus.frontends.xiaozhi.envelope import (
    CLOSE_PROTOCOL_ERROR,
    check_device_hello,
    envelope_sender,
    parse_message,
    serve_envelopes,
    server_hello,
)
from mcp_nexus.frontends.xiaozhi.protocol import DEVICE, ToolService, encode
from mcp_nexus.frontends.xiaozhi.status import LinkStatus
from mcp_nexus.frontends.xiaozhi.tool_view import ToolView
from mcp_nexus.gateway import Gateway

logger = logging.getLogger(__name__)

_MAX_CLOSE_REASON = 120  # the WebSocket protocol allows 123 bytes


def bearer_token(headers: Headers) -> str | None:
    value = headers.get("Authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


class EnvelopeServer:
    def __init__(self, gateway: Gateway, settings: EnvelopeServerSettings, *, call_timeout: float) -> None:
        self.gateway = gateway
        self.settings = settings
        self.call_timeout = call_timeout
        self.view = ToolView(
            gateway.catalog,
            settings.tools,
            map_names=False,
            search=lambda: gateway.config.gateway.tool_search,
            profiles=gateway.profiles,
            profile=settings.profile,
        )
        self.status = LinkStatus("envelope_server", f"ws://{settings.host}:{settings.port}{settings.path}")
        self._server: Server | None = None
        self._sessions: dict[ServerConnection, tuple[str, ToolService]] = {}
        self._secrets = [settings.token] if settings.token else []

    @property
    def port(self) -> int:
        """The bound port (useful when the config says 0)."""
        if self._server is None:
            return self.settings.port
        return int(next(iter(self._server.sockets)).getsockname()[1])

    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            self.settings.host,
            self.settings.port,
            process_request=self._check_request,
            max_size=MAX_FRAME_BYTES,
            logger=websocket_logger("envelope-server", self._secrets),
            server_header="mcp-nexus",
        )
        self.status.url = f"ws://{self.settings.host}:{self.port}{self.settings.path}"
        logger.info("envelope server listening on %s", self.status.url)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close(close_connections=True)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 10)
            self._server = None

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path.rstrip("/") != self.settings.path.rstrip("/"):
            return connection.respond(
                HTTPStatus.NOT_FOUND, f"no envelope endpoint at {path}; try {self.settings.path}\n"
            )
        token = bearer_token(request.headers)
        expected = self.settings.token or ""
        if token is None or not hmac.compare_digest(token.encode(), expected.encode()):
            self.status.last_error = "refused a connection with a missing or bad bearer token"
            logger.warning("envelope server: refused a connection with a missing or bad bearer token")
            return connection.respond(HTTPStatus.UNAUTHORIZED, "missing or bad Authorization: Bearer token\n")
        if not request.headers.get("Device-Id"):
            return connection.respond(HTTPStatus.BAD_REQUEST, "the Device-Id header is required\n")
        return None

    async def _refuse(self, ws: ServerConnection, label: str, reason: str) -> None:
        self.status.last_error = f"{label}: {reason}"
        logger.warning("envelope server: %s: %s", label, reason)
        await ws.close(CLOSE_PROTOCOL_ERROR, reason[:_MAX_CLOSE_REASON])

    async def _handle(self, ws: ServerConnection) -> None:
        device_id = ws.request.headers.get("Device-Id", "?") if ws.request else "?"
        label = f"device {device_id}"
        self.status.attempts += 1
        try:
            frame = await asyncio.wait_for(ws.recv(), self.settings.hello_timeout)
        except TimeoutError:
            await self._refuse(ws, label, f"no hello within {self.settings.hello_timeout:g} s")
            return
        except ConnectionClosed:
            return
        try:
            check_device_hello(parse_message(frame))
        except ValueError as exc:
            await self._refuse(ws, label, str(exc))
            return
        session_id = str(uuid.uuid4())
        await ws.send(encode(server_hello(session_id)))
        service = ToolService(
            self.gateway,
            self.view,
            DEVICE,
            send=envelope_sender(ws, session_id),
            page_bytes=self.settings.page_bytes,
            call_timeout=self.call_timeout,
            client=label,
            on_call=self._count_call,
        )
        self._sessions[ws] = (device_id, service)
        self.status.sessions += 1
        self._update()
        logger.info("envelope server: %s opened session %s", label, session_id)
        try:
            await serve_envelopes(ws, service, session_id, self.settings.idle_timeout, label)
        finally:
            await service.aclose()
            self._sessions.pop(ws, None)
            self.status.last_close_code, self.status.last_close_reason = (
                ws.close_code,
                ws.close_reason or None,
            )
            self._update()

    def _update(self) -> None:
        self.status.peers = [device for device, _ in self._sessions.values()]
        connected = bool(self._sessions)
        if connected != self.status.connected:
            self.status.mark_connected() if connected else self.status.mark_disconnected(
                self.status.last_close_code, self.status.last_close_reason
            )

    def _count_call(self) -> None:
        self.status.calls_served += 1
