"""A server that needs an OAuth login goes CONNECTING -> NEEDS_AUTH, never through ERROR, and waits there.

Real parts: the OAuth-protected test server (oauth_peer.py) as a process, a real `Upstream`
and `Supervisor`, the gateway's OAuth manager over an in-memory vault (no login in it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp_nexus.upstream.oauth.manager import OAuthManager
from mcp_nexus.upstream.oauth.vault import MemoryVault
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.supervisor import Supervisor
from mcp_nexus.upstream.upstream import Upstream
from oauth.oauth_peer_process import oauth_peer
from support.gateway import server_config


def _states(upstream: Upstream) -> list[str]:
    return [str(change.to_state) for change in upstream.history]


async def test_a_server_without_a_login_waits_in_needs_auth_without_error_or_retries(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log") as peer:
        config = server_config(
            "locked",
            {
                "transport": "http",
                "url": peer.mcp_url,
                "auth": "oauth",
                "restart": {"backoff_min": 0.05, "backoff_max": 0.1},
            },
        )
        upstream = Upstream(config)
        manager = OAuthManager(upstream.events, MemoryVault())
        manager.configure(upstreams={"locked": upstream})
        supervisor = Supervisor(upstream)
        try:
            await supervisor.start()
            assert upstream.state == UpstreamState.NEEDS_AUTH, _states(upstream)
            assert "nexus auth login locked" in (upstream.last_error or "")
            # A few backoffs' worth of time: nothing retries a server that waits for a person.
            await asyncio.sleep(0.5)
            assert not supervisor.recovering and supervisor.budget.attempts == 0
            assert _states(upstream) == ["CONNECTING", "NEEDS_AUTH"]
            # The operator starts it again (without a login): straight back to NEEDS_AUTH.
            await supervisor.start()
            assert _states(upstream) == ["CONNECTING", "NEEDS_AUTH", "CONNECTING", "NEEDS_AUTH"]
            assert "ERROR" not in _states(upstream)
            assert peer.stats()["code_exchanges"] == 0
            status = await manager.server_status("locked")
            assert status["login"] == "needed" and status["state"] == "NEEDS_AUTH", status
        finally:
            await supervisor.close()
        assert upstream.state == UpstreamState.STOPPED


async def test_stop_keeping_the_error_keeps_needs_auth(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log") as peer:
        config = server_config("locked", {"transport": "http", "url": peer.mcp_url, "auth": "oauth"})
        upstream = Upstream(config)
        manager = OAuthManager(upstream.events, MemoryVault())
        manager.configure(upstreams={"locked": upstream})
        await upstream.start()
        assert upstream.state == UpstreamState.NEEDS_AUTH
        await upstream.stop(reason="recovery", keep_error=True)
        assert upstream.state == UpstreamState.NEEDS_AUTH  # its reason stays visible
        await upstream.stop(reason="operator")
        assert upstream.state == UpstreamState.STOPPED
