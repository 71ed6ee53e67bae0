"""A served gateway in front of the MCP Python SDK's `simple-auth` example pair (not Nexus code).

What the example supports is covered as it is: login through its form, calls, a restart of the
gateway that keeps the login, and the loss of a token (expiry, or its authorization server
restarted, which forgets every token: the example has no revocation endpoint) that puts the
server back in NEEDS_AUTH, and a new login after either. It issues no refresh tokens, so an expired token cannot be refreshed:
the test checks that Nexus says so (`refreshable` false) and asks for a new login instead.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx2

from oauth.simple_auth_pair import SimpleAuthPair, browser_login, simple_auth_pair
from support.served_gateway import ServedGateway, served

SERVER = "timeclock"
TOOL = f"{SERVER}.get_time"


def _config(tmp_path: Path, pair: SimpleAuthPair) -> Path:
    path = tmp_path / "nexus.json"
    server: dict[str, Any] = {"transport": "http", "url": pair.mcp_url, "auth": "oauth"}
    server["restart"] = {"backoff_min": 0.1, "backoff_max": 0.5}
    path.write_text(json.dumps({"servers": {SERVER: server}}))
    return path


def _login(gateway: ServedGateway) -> float:
    """Log in as the operator would (admin API, then the browser); when the login finished."""
    started = gateway.post(f"/api/auth/{SERVER}/login")
    assert started.status_code == 200, started.text
    url = started.json()["authorization_url"]
    assert url, started.json()
    back = httpx2.get(browser_login(url), timeout=60)
    assert back.status_code == 200, back.text
    assert f"Logged in to {SERVER}" in back.text
    done = time.time()
    gateway.wait_state(SERVER, "READY")
    return done


def _assert_time_answer(gateway: ServedGateway) -> None:
    answer = gateway.call(TOOL)
    assert answer.status_code == 200, answer.text
    assert "current_time" in answer.text, answer.text


def _assert_needs_login(gateway: ServedGateway) -> None:
    refused = gateway.call(TOOL)
    assert refused.json()["code"] == -32003, refused.text
    assert f"nexus auth login {SERVER}" in refused.json()["error"], refused.text
    row = gateway.wait_state(SERVER, "NEEDS_AUTH")
    assert f"nexus auth login {SERVER}" in row["last_error"]
    assert TOOL not in gateway.tool_names()


def test_login_call_and_a_gateway_restart_keeps_the_login(tmp_path: Path) -> None:
    # The gateway starts while the pair does (it retries the server until it answers).
    with simple_auth_pair(tmp_path, wait=False) as pair:
        config = _config(tmp_path, pair)
        with served(config, tmp_path) as gateway:
            pair.wait_ready()
            row = gateway.wait_state(SERVER, "NEEDS_AUTH")
            assert f"nexus auth login {SERVER}" in row["last_error"]
            assert gateway.call(TOOL).status_code != 200
            _login(gateway)
            _assert_time_answer(gateway)
            status = gateway.get(f"/api/auth/{SERVER}").json()
            assert status["login"] == "logged in", status
            assert status["refreshable"] is False  # the example issues no refresh token
        exchanges = pair.token_requests()
        assert exchanges == 1, pair.as_log()[-3000:]

        with served(config, tmp_path) as gateway:
            gateway.wait_state(SERVER, "READY")  # the stored login, no new one
            _assert_time_answer(gateway)
            assert pair.token_requests() == exchanges
            log = gateway.log.read_text()
        # The example's codes and tokens are mcp_ and 32 or 64 hex digits.
        assert not re.search(r"mcp_[0-9a-f]{32}", log), "a code or token reached the log"


def test_revoked_at_the_authorization_server_needs_a_new_login(tmp_path: Path) -> None:
    with (
        simple_auth_pair(tmp_path, wait=False) as pair,
        served(_config(tmp_path, pair), tmp_path) as gateway,
    ):
        pair.wait_ready()
        gateway.wait_state(SERVER, "NEEDS_AUTH")
        _login(gateway)
        _assert_time_answer(gateway)
        pair.restart_authorization_server()  # it forgets every token: the login is revoked
        _assert_needs_login(gateway)
        status = gateway.get(f"/api/auth/{SERVER}").json()
        assert status["login"] == "needed", status
        # It forgot the client registered with it too: a logout drops Nexus's copy, and the
        # next login registers anew.
        registrations = pair.as_log().count('"POST /register HTTP')
        assert gateway.post(f"/api/auth/{SERVER}/logout").status_code == 200
        _login(gateway)
        _assert_time_answer(gateway)
        assert pair.as_log().count('"POST /register HTTP') > registrations
        log = gateway.log.read_text()
    assert not re.search(r"mcp_[0-9a-f]{32}", log), "a code or token reached the log"


def test_expired_token_without_refresh_token_needs_a_new_login(tmp_path: Path) -> None:
    lifetime = 5
    with (
        simple_auth_pair(tmp_path, token_lifetime_s=lifetime, wait=False) as pair,
        served(_config(tmp_path, pair), tmp_path) as gateway,
    ):
        pair.wait_ready()
        gateway.wait_state(SERVER, "NEEDS_AUTH")
        logged_in = _login(gateway)
        _assert_time_answer(gateway)
        expires_in = gateway.get(f"/api/auth/{SERVER}").json()["expires_in"]
        assert expires_in is not None and 0 <= expires_in <= lifetime, expires_in
        time.sleep(max(0.0, logged_in + lifetime + 0.5 - time.time()))
        # The authorization server's introspection now calls the token inactive, the resource
        # server answers 401, and there is nothing to refresh with: a new login is needed.
        _assert_needs_login(gateway)
        # That login reuses the client registered before (the server still knows it).
        registrations = pair.as_log().count('"POST /register HTTP')
        _login(gateway)
        _assert_time_answer(gateway)
        assert pair.as_log().count('"POST /register HTTP') == registrations
        # Two code exchanges, and the second login's check that its stored client is still known.
        assert pair.token_requests() == 3
