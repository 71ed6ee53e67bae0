"""A server on the older HTTP+SSE transport, through the SDK's SSE client."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from mcp.client.sse import sse_client
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from mcp_nexus.upstream.http import http_headers, oauth_auth
from mcp_nexus.upstream.session import Session


class SseSession(Session):
    transport = "sse"

    async def _dispatcher(self, stack: AsyncExitStack) -> Any:
        config = self.config
        assert config.url is not None
        read, write = await stack.enter_async_context(
            sse_client(
                config.url,
                headers=http_headers(config),
                timeout=config.timeouts.connect,
                sse_read_timeout=config.timeouts.sse_read,
                auth=oauth_auth(config, self),
            )
        )
        # The older transport answers on the one event stream, behind whatever the server sent before.
        return JSONRPCDispatcher(self.budgeted(read, stack, answers_apart=False), write)
