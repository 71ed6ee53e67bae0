"""An authorization server that no longer knows Nexus's client (`invalid_client`): the next login registers anew.

Real parts: the OAuth-protected test server (oauth_peer.py) as a process, which forgets every
client it registered on `/test/forget-clients` (as one that lost its state does) and then
answers a token request `invalid_client`, and the MCP SDK's simple-auth example, which forgets
them when it restarts; a served gateway (`nexus serve`) for a dynamically registered client; a real `Upstream`, `Supervisor` and OAuth manager for a client the config
pre-registers (`auth.client_id`), which is not dropped: the message names the fields to fix.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPError
from pydantic import AnyUrl

from mcp_nexus.config.oauth import OAuthSettings
from mcp_nexus.upstream.oauth.storage import VaultTokenStorage
from mcp_nexus.upstream.oauth.vault import MemoryVault
from mcp_nexus.upstream.state import UpstreamState
from oauth.oauth_login_in_process import log_in, oauth_server_parts
from oauth.oauth_peer_process import OAuthPeer, oauth_peer
from oauth.simple_auth_pair import simple_auth_pair
from oauth.test_oauth_login_served import _config, _login
from oauth.test_oauth_simple_auth import SERVER as SIMPLE_SERVER
from oauth.test_oauth_simple_auth import _config as simple_auth_config
from oauth.test_oauth_simple_auth import _login as simple_auth_login
from support.gateway import server_config
from support.served_gateway import served


def _forget_clients(peer: OAuthPeer) -> None:
    httpx2.post(f"{peer.base}/test/forget-clients", timeout=5).raise_for_status()


def test_a_forgotten_registration_is_dropped_and_the_next_login_registers_anew(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log") as peer, served(_config(tmp_path, peer), tmp_path) as gateway:
        gateway.wait_state("locked", "NEEDS_AUTH")
        _login(gateway)
        gateway.wait_state("locked", "READY")
        first_client = gateway.get("/api/auth/locked").json()["client_id"]
        assert first_client and peer.stats()["registrations"] == 1

        _forget_clients(peer)
        peer.expire()  # the access token is refused: the refresh meets the unknown client
        refused = gateway.call("locked.add", {"a": 1, "b": 1})
        assert refused.json()["code"] == -32003, refused.text
        row = gateway.wait_state("locked", "NEEDS_AUTH")
        assert "invalid_client" in row["last_error"], row["last_error"]
        assert "a new login registers again" in row["last_error"], row["last_error"]
        assert "nexus auth login locked" in row["last_error"], row["last_error"]
        status = gateway.get("/api/auth/locked").json()
        assert status["client_id"] is None and status["login"] == "needed", status
        assert peer.stats()["refreshes"] == 0  # refused before the refresh token was looked at

        _login(gateway)  # before: the browser met "Client ID not found", again at every login
        gateway.wait_state("locked", "READY")
        assert peer.stats()["registrations"] == 2
        assert gateway.get("/api/auth/locked").json()["client_id"] not in (None, first_client)
        answer = gateway.call("locked.add", {"a": 2, "b": 3})
        assert answer.status_code == 200, answer.text
        assert "5" in answer.text


def test_a_login_checks_a_stored_client_before_sending_the_browser_to_it(tmp_path: Path) -> None:
    """The client is forgotten while the server waits for a login (no token left to refresh):
    the login finds out by itself, where the browser would have met "client not found"."""
    with oauth_peer(tmp_path / "peer.log") as peer, served(_config(tmp_path, peer), tmp_path) as gateway:
        gateway.wait_state("locked", "NEEDS_AUTH")
        _login(gateway)
        gateway.wait_state("locked", "READY")
        peer.revoke()  # the refresh is refused for its token (invalid_grant): the client stays
        assert gateway.call("locked.add", {"a": 1, "b": 1}).json()["code"] == -32003
        row = gateway.wait_state("locked", "NEEDS_AUTH")
        assert "invalid_client" not in row["last_error"], row["last_error"]
        first_client = gateway.get("/api/auth/locked").json()["client_id"]
        assert first_client

        _forget_clients(peer)
        _login(gateway)
        gateway.wait_state("locked", "READY")
        assert peer.stats()["registrations"] == 2
        assert gateway.get("/api/auth/locked").json()["client_id"] not in (None, first_client)
        answer = gateway.call("locked.add", {"a": 2, "b": 3})
        assert answer.status_code == 200 and "5" in answer.text, answer.text


def test_an_authorization_server_restarted_empty_needs_no_logout_before_the_login(tmp_path: Path) -> None:
    """The SDK's simple-auth example (not Nexus code) forgets every client when it restarts; the
    next login finds its stored client unknown and registers anew (a logout was needed before)."""
    with (
        simple_auth_pair(tmp_path, wait=False) as pair,
        served(simple_auth_config(tmp_path, pair), tmp_path) as gateway,
    ):
        # Both start at once; the gateway retries the server until the pair answers.
        gateway.wait_state(SIMPLE_SERVER, "NEEDS_AUTH")
        simple_auth_login(gateway)
        assert pair.as_log().count('"POST /register HTTP') == 1
        pair.restart_authorization_server()
        simple_auth_login(gateway)  # no logout first
        assert pair.as_log().count('"POST /register HTTP') == 2  # both runs' logs
        answer = gateway.call(f"{SIMPLE_SERVER}.get_time")
        assert answer.status_code == 200 and "current_time" in answer.text, answer.text


async def test_a_refused_preregistered_client_is_kept_and_its_fields_are_named(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log") as peer:
        redirect = "http://127.0.0.1:8787/oauth/callback"  # never opened: the test hands the callback over
        registered = httpx2.post(
            f"{peer.base}/register",
            json={
                "redirect_uris": [redirect],
                "client_name": "registered by hand",
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "client_secret_post",
            },
            timeout=5,
        ).json()
        auth = {
            "client_id": registered["client_id"],
            "client_secret": registered["client_secret"],
            "token_endpoint_auth_method": "client_secret_post",
            "redirect_uri": redirect,
        }
        config = server_config("locked", {"transport": "http", "url": peer.mcp_url, "auth": auth})
        async with oauth_server_parts(config) as parts:
            upstream, manager = parts.upstream, parts.manager
            await parts.supervisor.start()
            assert upstream.state == UpstreamState.NEEDS_AUTH
            assert await log_in(manager, "locked") == registered["client_id"]
            assert upstream.state == UpstreamState.READY, upstream.last_error

            _forget_clients(peer)
            peer.expire()
            # The token is refused; the refresh presents the client, refused as well.
            with pytest.raises(MCPError):
                await upstream.call_tool("add", {"a": 1, "b": 1})
            assert upstream.state == UpstreamState.NEEDS_AUTH, upstream.last_error
            error = upstream.last_error or ""
            assert "refused the configured client (invalid_client)" in error, error
            assert f"auth.client_id {registered['client_id']!r}" in error and "auth.client_secret" in error
            assert "'locked'" in error
            # Nothing is dropped for a configured client: its login stays for when it is fixed.
            assert parts.vault.records["locked"].get("tokens"), parts.vault.records["locked"]
            assert peer.stats()["registrations"] == 1  # the test's own: Nexus registered none


def test_forgetting_a_refused_client_drops_its_registration_and_tokens(tmp_path: Path) -> None:
    """What `forget_client` leaves of a login record: no registration, no token."""

    async def run() -> dict[str, Any]:
        vault = MemoryVault()
        storage = VaultTokenStorage("s", "http://127.0.0.1:1/mcp", "http://cb", OAuthSettings(), vault)
        await storage.set_client_info(
            OAuthClientInformationFull(client_id="c1", redirect_uris=[AnyUrl("http://cb")])
        )
        await storage.set_tokens(OAuthToken(access_token="a", token_type="Bearer", expires_in=60))
        await storage.forget_client("another")  # not the one stored (another replica's): kept
        assert (await storage.get_client_info()) is not None and await storage.get_tokens() is not None
        await storage.forget_client("c1")
        await storage.reload()
        assert await storage.get_client_info() is None and await storage.get_tokens() is None
        return vault.records["s"]

    record = asyncio.run(run())
    assert not {"client_info", "tokens", "expires_at"} & set(record), json.dumps(record)
