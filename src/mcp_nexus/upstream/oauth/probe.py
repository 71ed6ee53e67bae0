"""What a login runs to make its provider do the whole flow: a short MCP session, through it.

A login does not keep a session (that is the server's restart, after): it opens one the way
the server's own sessions open (server/discover or initialize, then tools/list), with the
login's provider as its `httpx2.Auth`, and closes it. Whatever the server protects first (the
handshake, the discovery, the list) answers 401, which starts the flow; the session opening
and listing afterwards shows the login works.
"""

from __future__ import annotations

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.bounded_answers import ACCEPTED_ENCODINGS, bound_answers
from mcp_nexus.upstream.oauth.errors import LoginFailed


async def probe_server(config: ServerConfig, auth: httpx2.Auth) -> int:
    """Open a session through `auth`, list the tools, close; the number of tools listed."""
    assert config.url is not None
    # The server's own headers; Authorization is the login's (an apiKey does not apply).
    headers = {k: v for k, v in config.headers.items() if k.lower() != "authorization"}
    try:
        if config.transport == "sse":
            transport = sse_client(config.url, headers=headers, timeout=config.timeouts.connect, auth=auth)
            async with Client(transport, mode="legacy") as client:
                return len((await client.list_tools()).tools)
        timeout = httpx2.Timeout(config.timeouts.call, connect=config.timeouts.connect)
        message_bytes = config.limits.message_bytes
        async with httpx2.AsyncClient(
            auth=auth,
            headers={"Accept-Encoding": ACCEPTED_ENCODINGS, **headers},
            timeout=timeout,
            follow_redirects=False,
            event_hooks={"response": [bound_answers(config.url, message_bytes)]},
        ) as http:
            mode = "legacy" if config.protocol == "legacy" else "auto"
            streamable = streamable_http_client(
                config.url, http_client=http, max_sse_event_size=message_bytes
            )
            async with Client(streamable, mode=mode) as client:
                return len((await client.list_tools()).tools)
    except LoginFailed:
        raise
    except BaseException as exc:
        if isinstance(exc, BaseExceptionGroup):
            found = exc.subgroup(LoginFailed)
            if found is not None:
                raise found.exceptions[0] from None
        if not isinstance(exc, Exception | BaseExceptionGroup):
            raise
        raise LoginFailed(
            f"server {config.name!r}: the session after the login failed: {_describe(exc)}"
        ) from None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return str(exc) or type(exc).__name__
