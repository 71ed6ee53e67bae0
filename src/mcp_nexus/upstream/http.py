"""A streamable-HTTP server, through the SDK's HTTP transport (SSE, session ids, resumption)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx2
import orjson
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from mcp_nexus import tracing
from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.bounded_answers import ACCEPTED_ENCODINGS, bound_answers
from mcp_nexus.upstream.session import Session


def oauth_auth(config: ServerConfig, session: Session) -> httpx2.Auth | None:
    """The server's OAuth client (`auth:` in its config), or None: its logins are the gateway's.

    A login it finds missing is told to `session` (`refused_for_login`), so that the connect
    that failed for it ends in NEEDS_AUTH rather than ERROR."""
    if config.auth is None:
        return None
    own: httpx2.Auth | None = getattr(session, "user_auth", None)
    if own is not None:  # a user's own session (upstream/user_sessions.py) carries that user's login
        return own
    from mcp_nexus.upstream.oauth.manager import manager_for_config

    return manager_for_config(config).session_auth(config, session.refused_for_login)


def http_headers(config: ServerConfig) -> dict[str, str]:
    headers = dict(config.headers)
    if config.api_key and not any(k.lower() == "authorization" for k in headers):
        headers["Authorization"] = f"Bearer {config.api_key}"
    return headers


async def trace_headers(request: httpx2.Request) -> None:
    """Copy a JSON-RPC request's `_meta` traceparent/tracestate into the HTTP headers."""
    body = request.content
    if b'"traceparent"' not in body:
        return
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict):
        for key in (tracing.TRACEPARENT, tracing.TRACESTATE):
            if isinstance(meta.get(key), str):
                request.headers[key] = meta[key]


class HttpSession(Session):
    transport = "http"

    async def _dispatcher(self, stack: AsyncExitStack) -> Any:
        config = self.config
        assert config.url is not None
        timeout = httpx2.Timeout(
            config.timeouts.call, connect=config.timeouts.connect, read=config.timeouts.sse_read
        )
        # With tracing on, each request's trace context (put in `_meta` by the route's span) also
        # travels as W3C headers, which HTTP servers and proxies read (tracing.py).
        hooks: dict[str, list[Any]] = {"request": [trace_headers]} if tracing.tracer() is not None else {}
        # Every answer read up to a bound, the OAuth flow's too (upstream/bounded_answers.py).
        message_bytes = config.limits.message_bytes
        hooks["response"] = [bound_answers(config.url, message_bytes)]
        client = httpx2.AsyncClient(
            headers={"Accept-Encoding": ACCEPTED_ENCODINGS, **http_headers(config)},
            timeout=timeout,
            follow_redirects=False,
            event_hooks=hooks,
            auth=oauth_auth(config, self),
        )
        stack.push_async_callback(client.aclose)
        read, write = await stack.enter_async_context(
            streamable_http_client(config.url, http_client=client, max_sse_event_size=message_bytes)
        )
        return JSONRPCDispatcher(self.budgeted(read, stack), write)
