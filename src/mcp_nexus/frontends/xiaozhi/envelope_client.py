"""Envelope client role: Nexus dials a device backend as a device would and offers it a tool set.

It sends the device headers and hello (`features.mcp`), waits for the server's hello (10 s),
then answers the backend's MCP requests inside `type: mcp` envelopes with the tools its
`tools` filter lets through. Redialled with backoff like an endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import time

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from mcp_nexus.config.secrets import mask_url, secrets_of
from mcp_nexus.config.xiaozhi import EnvelopeClientSettings
from mcp_nexus.frontends.xiaozhi.connection import MAX_FRAME_BYTES, USER_AGENT, websocket_logger
from mcp_nexus.frontends.xiaozhi.envelope import (
    CLOSE_PROTOCOL_ERROR,
    HelloError,
    check_server_hello,
    device_hello,
    envelope_sender,
    parse_message,
    serve_envelopes,
)
from mcp_nexus.frontends.xiaozhi.protocol import DEVICE, ToolService, encode
from mcp_nexus.frontends.xiaozhi.reconnect import DialingLink, ReconnectLoop, SessionEnd, SessionRefused
from mcp_nexus.frontends.xiaozhi.status import LinkStatus
from mcp_nexus.frontends.xiaozhi.tool_view import ToolView
from mcp_nexus.gateway import Gateway

logger = logging.getLogger(__name__)


class EnvelopeClient(DialingLink):
    def __init__(self, gateway: Gateway, settings: EnvelopeClientSettings, *, call_timeout: float) -> None:
        if not settings.url:
            raise ValueError("the envelope client needs 'url' (the backend's ws:// or wss:// address)")
        self.gateway = gateway
        self.settings = settings
        self.url = settings.url
        self.call_timeout = call_timeout
        self.view = ToolView(
            gateway.catalog,
            settings.tools,
            map_names=False,
            search=lambda: gateway.config.gateway.tool_search,
            profiles=gateway.profiles,
            profile=settings.profile,
        )
        self.secrets = [*secrets_of(self.url), *([settings.token] if settings.token else [])]
        self.status = LinkStatus("envelope_client", mask_url(self.url))
        self._loop = ReconnectLoop(self.status, settings, self._attempt, logger, self.secrets)
        self._ws_logger = websocket_logger("envelope-client", self.secrets)
        self._task: asyncio.Task[None] | None = None
        self._label = "envelope client"
        self._ws: ClientConnection | None = None
        self.session_id: str | None = None

    def _headers(self) -> dict[str, str]:
        headers = {
            "Protocol-Version": str(self.settings.protocol_version),
            "Device-Id": self.settings.device_id,
            "Client-Id": self.settings.client_id,
        }
        if self.settings.token:
            headers["Authorization"] = f"Bearer {self.settings.token}"
        return headers

    async def _await_hello(self, ws: ClientConnection) -> str:
        deadline = time.monotonic() + self.settings.hello_timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                frame = await asyncio.wait_for(ws.recv(), max(remaining, 0))
            except TimeoutError:
                reason = f"no hello from the server within {self.settings.hello_timeout:g} s"
                await ws.close(CLOSE_PROTOCOL_ERROR, reason)
                raise SessionRefused(reason) from None
            if isinstance(frame, bytes):
                continue  # audio before the hello: not ours
            try:
                return check_server_hello(parse_message(frame))
            except (HelloError, ValueError) as exc:
                await ws.close(CLOSE_PROTOCOL_ERROR, str(exc)[:120])
                raise SessionRefused(f"bad hello from the server: {exc}") from None

    async def _attempt(self) -> SessionEnd:
        async with connect(
            self.url,
            additional_headers=self._headers(),
            user_agent_header=USER_AGENT,
            open_timeout=self.settings.hello_timeout,
            close_timeout=5,
            max_size=MAX_FRAME_BYTES,
            logger=self._ws_logger,
        ) as ws:
            self._ws = ws
            self.status.mark_connected()
            service: ToolService | None = None
            ended: str | None = None
            try:
                await ws.send(encode(device_hello()))
                self.session_id = await self._await_hello(ws)
                logger.info("%s: session %s open", self.status.url, self.session_id)
                service = ToolService(
                    self.gateway,
                    self.view,
                    DEVICE,
                    send=envelope_sender(ws, self.session_id),
                    page_bytes=self.settings.page_bytes,
                    call_timeout=self.call_timeout,
                    client=f"backend {self.status.url}",
                    on_call=self._count_call,
                )
                self.status.sessions += 1
                ended = await serve_envelopes(
                    ws, service, self.session_id, self.settings.idle_timeout, self.status.url
                )
            except ConnectionClosed:
                pass
            finally:
                if service is not None:
                    await service.aclose()
                self._ws = None
                self.session_id = None
                self.status.mark_disconnected(ws.close_code, ws.close_reason)
            return SessionEnd(service is not None, ws.close_code, ws.close_reason or "", error=ended)

    def _count_call(self) -> None:
        self.status.calls_served += 1
