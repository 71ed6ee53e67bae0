"""A served gateway in front of a real OAuth-protected MCP server: NEEDS_AUTH, login, calls, restart, refresh, revoke."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2

from oauth.oauth_peer_process import OAuthPeer, oauth_peer
from support.served_gateway import ServedGateway, served


def _config(tmp_path: Path, peer: OAuthPeer, **auth: Any) -> Path:
    path = tmp_path / "nexus.json"
    server: dict[str, Any] = {"transport": "http", "url": peer.mcp_url, "auth": auth or "oauth"}
    server["restart"] = {"backoff_min": 0.1, "backoff_max": 0.5}
    path.write_text(json.dumps({"servers": {"locked": server}}))
    return path


def _browser(authorization_url: str) -> httpx2.Response:
    """What a browser does: open the authorization URL, follow the redirect back to the gateway."""
    answer = httpx2.get(authorization_url, follow_redirects=False, timeout=10)
    assert answer.status_code in (302, 303, 307), answer.text
    location = answer.headers["location"]
    assert urlparse(location).path == "/oauth/callback", location
    assert "state" in parse_qs(urlparse(location).query)
    return httpx2.get(location, timeout=60)


def _login(gateway: ServedGateway) -> None:
    started = gateway.post("/api/auth/locked/login")
    assert started.status_code == 200, started.text
    url = started.json()["authorization_url"]
    assert url, started.json()
    back = _browser(url)
    assert back.status_code == 200, back.text
    assert "Logged in to locked" in back.text


def test_needs_auth_then_login_then_calls(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log") as peer, served(_config(tmp_path, peer), tmp_path) as gateway:
        row = gateway.wait_state("locked", "NEEDS_AUTH")
        assert "nexus auth login locked" in row["last_error"]
        assert [h["to"] for h in row["history"]] == ["CONNECTING", "NEEDS_AUTH"], row["history"]
        refused = gateway.call("locked.add", {"a": 2, "b": 3})
        assert "locked.add" not in gateway.tool_names()
        assert refused.status_code != 200, refused.text
        _login(gateway)
        gateway.wait_state("locked", "READY")
        answer = gateway.call("locked.add", {"a": 2, "b": 3})
        assert answer.status_code == 200, answer.text
        assert "5" in answer.text
        status = gateway.get("/api/auth/locked").json()
        assert status["login"] == "logged in", status
        assert status["refreshable"] is True
        assert "at_" not in json.dumps(status) and "rt_" not in json.dumps(status)


def test_login_survives_restart_refreshes_and_revocation_needs_a_new_one(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log", token_ttl=3600) as peer:
        config = _config(tmp_path, peer)
        with served(config, tmp_path) as gateway:
            gateway.wait_state("locked", "NEEDS_AUTH")
            _login(gateway)
            gateway.wait_state("locked", "READY")
        logins = peer.stats()["code_exchanges"]
        # At rest: a key file only its owner reads, and a login file without the token in clear.
        oauth_dir = tmp_path / "data" / "oauth"
        assert (oauth_dir / "key").stat().st_mode & 0o777 == 0o600
        sealed = (oauth_dir / "locked.login").read_bytes()
        assert peer.issued() and b"access_token" not in sealed
        assert not [token for token in peer.issued() if token.encode() in sealed]

        with served(config, tmp_path) as gateway:
            gateway.wait_state("locked", "READY")  # the stored login: no new one
            assert peer.stats()["code_exchanges"] == logins
            peer.expire()  # the server now refuses the access token: a 401, then a refresh
            answer = gateway.call("locked.add", {"a": 1, "b": 1})
            assert answer.status_code == 200, answer.text
            assert peer.stats()["refreshes"] >= 1
            peer.revoke()  # access and refresh tokens gone: only a new login helps
            # The call in flight when the refresh is refused gets what every later call gets.
            refused = gateway.call("locked.add", {"a": 1, "b": 1})
            assert refused.json()["code"] == -32003, refused.text
            assert "nexus auth login locked" in refused.json()["error"], refused.text
            row = gateway.wait_state("locked", "NEEDS_AUTH")
            assert "nexus auth login locked" in row["last_error"]
            again = gateway.call("locked.add", {"a": 1, "b": 1})
            assert again.json()["code"] == -32003, again.text
            assert again.json()["error"] == refused.json()["error"]
            # Every place an operator reads: the admin API, metrics (labels), the call log, the
            # dashboard's overview, the audit log; then the gateway's own log.
            places = ("/api/auth", "/api/servers", "/api/metrics", "/metrics", "/api/calls", "/api/dashboard")
            status = "".join(gateway.get(place).text for place in places)
            audit = sorted((tmp_path / "data" / "audit").glob("*.jsonl"))
            assert audit, "no audit file to search"
            status += "".join(path.read_text() for path in audit)
            log = gateway.log.read_text()
        assert "locked.add" in status  # the places were read, with the calls in them
        leaked = [token for token in peer.issued() if token in log or token in status]
        assert not leaked, "a token reached the log, the admin API, metrics, the call log or the audit log"
