"""One Xiaozhi endpoint: Nexus dials out and the endpoint is the MCP client.

Exactly one socket per endpoint at any time (a second one with the same token would replace
the first at the endpoint), carrying every aggregated tool. The socket is kept alive with
WebSocket pings and redialled by `ReconnectLoop` when it closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from mcp_nexus import __version__
from mcp_nexus.config.secrets import RedactingFilter, mask_url, secrets_of
from mcp_nexus.config.xiaozhi import XiaozhiSettings
from mcp_nexus.frontends.xiaozhi.protocol import ENDPOINT, ToolService
from mcp_nexus.frontends.xiaozhi.reconnect import DialingLink, ReconnectLoop, SessionEnd
from mcp_nexus.frontends.xiaozhi.status import LinkStatus
from mcp_nexus.frontends.xiaozhi.tool_view import ToolView
from mcp_nexus.gateway import Gateway

logger = logging.getLogger(__name__)

USER_AGENT = f"mcp-nexus/{__version__} xiaozhi-bridge"
MAX_FRAME_BYTES = 4 * 1024 * 1024
CLOSE_TIMEOUT = 5.0


def websocket_logger(name: str, secrets: list[str]) -> logging.Logger:
    """A logger for the websockets library that masks secrets (it logs request lines at debug level)."""
    ws_logger = logging.getLogger(f"{__name__}.websockets.{name}")
    if not any(isinstance(f, RedactingFilter) for f in ws_logger.filters):
        ws_logger.addFilter(RedactingFilter(secrets))
    return ws_logger


class EndpointConnection(DialingLink):
    def __init__(
        self, gateway: Gateway, url: str, settings: XiaozhiSettings, view: ToolView, index: int
    ) -> None:
        self.gateway = gateway
        self.url = url
        self.settings = settings
        self.view = view
        self.secrets = secrets_of(url)
        self.status = LinkStatus("endpoint", mask_url(url))
        # Who this endpoint's calls are (Caller.identity `xiaozhi:<client>`): one agent per URL, and
        # endpoints share a host (the cloud's), so a digest of the whole URL (never its token) tells
        # them apart: their offloaded files, private cache entries and limits are their own.
        digest = hashlib.sha256(url.encode()).hexdigest()[:8]
        self.client = f"endpoint {urlsplit(url).hostname} {digest}"
        self._ws_logger = websocket_logger(f"endpoint{index}", self.secrets)
        self._loop = ReconnectLoop(self.status, settings, self._attempt, logger, self.secrets)
        self._task: asyncio.Task[None] | None = None
        self._label = "xiaozhi"
        self._ws: ClientConnection | None = None
        self.service: ToolService | None = None

    async def notify_tools_changed(self) -> None:
        service = self.service
        if service is not None:
            await service.notify_tools_changed()

    async def _attempt(self) -> SessionEnd:
        settings = self.settings
        async with connect(
            self.url,
            user_agent_header=USER_AGENT,
            open_timeout=settings.open_timeout,
            ping_interval=settings.ping_interval,
            ping_timeout=settings.ping_timeout,
            # A hung endpoint answers no close frame either: do not wait longer for it than for a pong.
            close_timeout=min(CLOSE_TIMEOUT, settings.ping_timeout),
            max_size=MAX_FRAME_BYTES,
            logger=self._ws_logger,
        ) as ws:
            self._ws = ws
            self.status.mark_connected()
            logger.info("%s: connected", self.status.url)

            async def send(frame: bytes) -> None:
                with contextlib.suppress(ConnectionClosed):  # the peer is gone: nobody to answer
                    await ws.send(frame.decode("utf-8"))  # always a text frame

            service = ToolService(
                self.gateway,
                self.view,
                ENDPOINT,
                send=send,
                page_bytes=settings.page_bytes,
                call_timeout=settings.call_timeout,
                client=self.client,
                on_call=self._count_call,
                on_established=self._count_session,
            )
            self.service = service
            try:
                async for frame in ws:
                    await service.receive_frame(frame)
            except ConnectionClosed:
                pass  # the close code and reason are read below
            finally:
                self.service = None
                self._ws = None
                await service.aclose()
                code, reason = ws.close_code, ws.close_reason or ""
                sent = ws.protocol.close_sent
                if ws.protocol.close_rcvd is None and sent is not None:
                    # No close frame came back (1006): say why we closed, e.g. "keepalive ping timeout".
                    reason = f"no close frame from the endpoint; Nexus closed with {sent.code} {sent.reason}".strip()
                self.status.mark_disconnected(code, reason)
            return SessionEnd(service.initialized, code, reason)

    def _count_session(self) -> None:
        self.status.sessions += 1

    def _count_call(self) -> None:
        self.status.calls_served += 1
