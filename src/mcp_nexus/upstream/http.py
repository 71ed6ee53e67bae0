"""A streamable-HTTP server, through the SDK's HTTP transport (SSE, session ids, resumption)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.session import Session


def http_headers(config: ServerConfig) -> dict[str, str]:
    headers = dict(config.headers)
    if config.api_key and not any(k.lower() == "authorization" for k in headers):
        headers["Authorization"] = f"Bearer {config.api_key}"
    return headers


class HttpSession(Session):
    transport = "http"

    async def _dispatcher(self, stack: AsyncExitStack) -> Any:
        config = self.config
        assert config.url is not None
        timeout = httpx2.Timeout(
            config.timeouts.call, connect=config.timeouts.connect, read=config.timeouts.sse_read
        )
        client = httpx2.AsyncClient(headers=http_headers(config), timeout=timeout, follow_redirects=False)
        stack.push_async_callback(client.aclose)
        read, write = await stack.enter_async_context(streamable_http_client(config.url, http_client=client))
        return JSONRPCDispatcher(read, write)
