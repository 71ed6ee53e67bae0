"""One authorized request to a server: what makes a login's provider run the whole flow.

A login does not open an MCP session (that is the server's restart, after): it sends what a
session would send first, an `initialize` POST (streamable HTTP) or the event-stream GET (SSE),
with the login's provider as its `httpx2.Auth`. The 401 starts the flow; the retried request
after it shows the login works. A session the server opened for it is closed again.
"""

from __future__ import annotations

import contextlib

import httpx2

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.oauth.errors import LoginFailed

PROBE_PROTOCOL_VERSION = "2025-11-25"
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROBE_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcp-nexus-login", "version": "1"},
    },
}


async def probe_server(config: ServerConfig, auth: httpx2.Auth) -> int:
    """Send the first request of a session through `auth`; the HTTP status it finally got."""
    assert config.url is not None
    # The server's own headers; Authorization is the login's (an apiKey does not apply).
    headers = {k: v for k, v in config.headers.items() if k.lower() != "authorization"}
    timeout = httpx2.Timeout(config.timeouts.call, connect=config.timeouts.connect)
    async with httpx2.AsyncClient(
        auth=auth, headers=headers, timeout=timeout, follow_redirects=False
    ) as client:
        if config.transport == "sse":
            async with client.stream("GET", config.url, headers={"Accept": "text/event-stream"}) as response:
                status = response.status_code
        else:
            response = await client.post(
                config.url,
                json=_INITIALIZE,
                headers={
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": PROBE_PROTOCOL_VERSION,
                },
            )
            status = response.status_code
            session = response.headers.get("mcp-session-id")
            if session:
                with contextlib.suppress(httpx2.HTTPError):
                    await client.delete(config.url, headers={"mcp-session-id": session})
    if status in (401, 403):
        raise LoginFailed(f"server {config.name!r} still answers HTTP {status} after the login")
    return status
