"""The `websocket` upstream transport: an MCP server reached at a ws:// or wss:// URL.

    {"servers": {"robot": {"transport": "websocket", "url": "ws://127.0.0.1:9000/mcp",
                           "headers": {"Authorization": "Bearer ..."}, "open_timeout": 5}}}

`url` and `headers` are keys Nexus knows; `open_timeout` and `subprotocol` are this plugin's
own (Nexus keeps them in the entry's `options`); `WebSocketSettings` checks all four.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from pydantic import BaseModel, ConfigDict, Field, field_validator
from websockets.asyncio.client import connect

from mcp_nexus.plugin_api import TransportSpec, transport_settings
from mcp_nexus.upstream.session import Session
from nexus_test_plugin.ws_streams import message_streams


class WebSocketSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="ws:// or wss://")
    headers: dict[str, str] = Field(default_factory=dict)
    open_timeout: float = Field(default=10.0, gt=0, description="seconds for the opening handshake")
    subprotocol: str | None = Field(
        default="mcp", description="offered in Sec-WebSocket-Protocol; null: none"
    )

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if not value.startswith(("ws://", "wss://")):
            raise ValueError(f"must start with ws:// or wss://, got {value.split(':', 1)[0]!r}")
        return value


class WebSocketSession(Session):
    transport = "websocket"

    async def _dispatcher(self, stack: AsyncExitStack) -> Any:
        settings = transport_settings(self.config)
        assert isinstance(settings, WebSocketSettings)
        ws = await stack.enter_async_context(
            connect(
                settings.url,
                additional_headers=settings.headers or None,
                subprotocols=[settings.subprotocol] if settings.subprotocol else None,  # type: ignore[list-item]
                open_timeout=settings.open_timeout,
                max_size=None,
            )
        )
        read, write = await stack.enter_async_context(message_streams(ws))
        return JSONRPCDispatcher(read, write)


WEBSOCKET = TransportSpec(
    "websocket",
    WebSocketSession,
    config_model=WebSocketSettings,
    kind="network",
    priority=50,
    url_schemes=("ws", "wss"),
    description="JSON-RPC over WebSocket, one message per text frame",
)
