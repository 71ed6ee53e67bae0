"""Seam 4's session-limit members (`http_session_ids`, `close_http_session`) against the installed SDK.

The other seams' tests are in tests/test_sdk_seams.py; these fail loudly if an SDK release
renames the session manager's `_server_instances` or `_discard_session`.
"""

from __future__ import annotations

from typing import Any

import httpx2
from mcp.server import Server
from mcp.server.transport_security import TransportSecuritySettings

from mcp_nexus._sdk_seams import close_http_session, http_session_ids
from robustness.hostile_http import HANDSHAKE_VERSION, MCP_HEADERS, initialize_message


async def test_seam_4_lists_and_closes_http_sessions() -> None:
    server: Server[Any] = Server("seams")
    app = server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    manager = server.session_manager
    async with manager.run():
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as client:
            opened = await client.post("/mcp", json=initialize_message(), headers=MCP_HEADERS)
            session = opened.headers["mcp-session-id"]
            assert session in http_session_ids(manager)
            assert await close_http_session(manager, session) is True
            assert session not in http_session_ids(manager)
            assert await close_http_session(manager, session) is False
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            gone = await client.post(
                "/mcp",
                json=ping,
                headers={**MCP_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": HANDSHAKE_VERSION},
            )
            assert gone.status_code == 404
