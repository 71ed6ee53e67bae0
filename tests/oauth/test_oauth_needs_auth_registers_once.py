"""A server waiting in NEEDS_AUTH registers no OAuth client per connect attempt; the login registers once.

Real parts: the OAuth-protected test server (oauth_peer.py) as a process, counting dynamic
registrations (`/test/stats`), and the gateway's parts for one server in this process
(oauth_login_in_process.py). Before, the first connect attempt registered a client the
session could not use (no person to finish a login); a served gateway's login then
registered a second one, for the callback URL the frontend named after that first connect.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as types

from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import Upstream
from oauth.oauth_login_in_process import log_in, oauth_server_parts
from oauth.oauth_peer_process import oauth_peer
from support.gateway import server_config

CONNECT_ATTEMPTS = 5


async def test_connect_attempts_in_needs_auth_register_no_client_and_the_login_registers_once(
    tmp_path: Path,
) -> None:
    with oauth_peer(tmp_path / "peer.log") as peer:
        config = server_config(
            "locked",
            {"transport": "http", "url": peer.mcp_url, "auth": "oauth", "restart": {"backoff_min": 0.05}},
        )
        async with oauth_server_parts(config) as parts:
            upstream, supervisor, manager = parts.upstream, parts.supervisor, parts.manager
            # Nobody logs in: the operator (or a config reload) starts it again and again.
            for _ in range(CONNECT_ATTEMPTS):
                await supervisor.start()
                assert upstream.state == UpstreamState.NEEDS_AUTH, upstream.last_error
            assert "nexus auth login locked" in (upstream.last_error or "")
            assert peer.stats()["registrations"] == 0
            assert (await manager.server_status("locked"))["client_id"] is None

            client_id = await log_in(manager, "locked")
            await asyncio.wait_for(_until_ready(upstream), 10)
            assert peer.stats()["registrations"] == 1
            assert (await manager.server_status("locked"))["client_id"] == client_id
            assert parts.vault.records["locked"]["client_info"]["client_id"] == client_id
            outcome = await upstream.call_tool("add", {"a": 2, "b": 3})
            assert isinstance(outcome, types.CallToolResult) and not outcome.is_error, outcome
            assert [getattr(part, "text", None) for part in outcome.content] == ["5"], outcome

            # Later connects (a restart) use the stored login and its registration.
            for _ in range(2):
                await supervisor.start()
                assert upstream.state == UpstreamState.READY, upstream.last_error
            stats = peer.stats()
            assert (stats["registrations"], stats["code_exchanges"]) == (1, 1), stats


async def _until_ready(upstream: Upstream) -> None:
    while upstream.state != UpstreamState.READY:
        await asyncio.sleep(0.05)
