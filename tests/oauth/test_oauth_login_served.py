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
