"""A user's own login to a per-user upstream, started from the dashboard or the admin API (issue 26).

Real parts: `nexus serve` whose dashboard logs in through a real OpenID provider (npm
`oidc-provider`, oidc_login_peer.py: alice admin, bob viewer; the machine clients ops-bot admin,
eng-bot viewer, stranger no role), a per-user upstream `notes` (oauth_peer.py, its own
authorization server, which approves at once as the person it is told; its `whoami` answers
whose token it was called with) and headless Chromium. One gateway per module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Page, expect

from dashboard.oidc_login_peer import ROLES, TOKEN, LoginIdp, running_login_idp
from dashboard.test_dashboard_oidc import provider_login
from identity.oidc_peer import ACCEPT, initialize
from oauth.oauth_peer_process import OAuthPeer, oauth_peer
from support.processes import VENV_BIN, free_port, running, wait_for_http
from support.served_gateway import ServedGateway, gateway_env

Served = tuple[ServedGateway, LoginIdp, OAuthPeer]


def _follow(url: str) -> httpx2.Response:
    """A browser at the authorization URL: the upstream approves, back to the gateway's callback."""
    with httpx2.Client(timeout=15, follow_redirects=True) as http:
        return http.get(url)


@pytest.fixture(scope="module")
def served_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("own-login")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with (
        oauth_peer(tmp / "peer.log") as peer,
        running_login_idp(tmp, redirect_uri=base + "/dashboard/oidc/callback", resource=base + "/mcp") as idp,
    ):
        doc = {
            "gateway": {
                "include_builtins": False,
                "offload_threshold": None,
                "token": TOKEN,
                "auth": {"resource": base + "/mcp", "issuer": idp.issuer},
                "dashboard_login": {
                    "issuer": idp.issuer,
                    "client_id": "nexus-dashboard",
                    "label": "Test IdP",
                    "roles": ROLES,
                },
            },
            "servers": {"notes": {"transport": "http", "url": peer.mcp_url, "auth": {"per_user": True}}},
        }
        config = tmp / "nexus.json"
        config.write_text(json.dumps(doc))
        args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", str(port), "--no-watch"]
        with running(args, env=gateway_env(tmp), log=tmp / "gateway.log") as proc:
            wait_for_http(base + "/healthz", timeout=60, proc=proc)
            gateway = ServedGateway(base, TOKEN, tmp / "gateway.log")
            # The operator's shared login: the server lists its tools and turns READY.
            started = gateway.post("/api/auth/notes/login")
            assert started.status_code == 200, started.text
            assert _follow(started.json()["authorization_url"]).status_code == 200
            gateway.wait_state("notes", "READY")
            yield gateway, idp, peer


def _as(token: str) -> httpx2.Client:
    return httpx2.Client(timeout=15, headers={"Authorization": f"Bearer {token}"})


def _call_whoami(gateway: ServedGateway, token: str) -> dict[str, Any]:
    """notes.whoami over MCP (HTTP, 2025-11-25) with this access token: the JSON-RPC response."""
    url = gateway.base + "/mcp"
    with _as(token) as http:
        opened = http.post(url, headers=ACCEPT, json=initialize("own-login-test"))
        assert opened.status_code == 200, opened.text
        headers = {
            **ACCEPT,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-11-25",
        }
        http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "notes.whoami"}}
        answer = http.post(url, headers=headers, json=request)
    assert answer.status_code == 200, answer.text
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(answer.json())


def _mine(http: httpx2.Client, gateway: ServedGateway) -> dict[str, Any]:
    answer = http.get(gateway.base + "/api/auth/me")
    assert answer.status_code == 200, answer.text
    return {s["server"]: s["logged_in"] for s in answer.json()["servers"]}


def test_a_viewer_token_logs_itself_in_and_its_calls_carry_its_own_token(served_gateway: Served) -> None:
    gateway, idp, peer = served_gateway
    viewer = idp.token("eng-bot")  # a viewer (group eng); its token names the subject eng-bot
    with _as(viewer) as http:
        assert _mine(http, gateway) == {"notes": False}
        refused = _call_whoami(gateway, viewer)["error"]  # no login yet: told where to log in
        assert refused["code"] == -32003 and refused["data"]["user"] == "user:eng-bot", refused
        started = http.post(gateway.base + "/api/auth/notes/login/me")
        assert started.status_code == 200, started.text
        assert started.json()["user"] == "user:eng-bot"
        peer.next_subject("eng-bot")
        back = _follow(started.json()["authorization_url"])
        assert back.status_code == 200 and "Logged in to notes" in back.text, back.text
        assert _mine(http, gateway) == {"notes": True}
        called = _call_whoami(gateway, viewer)
        assert called["result"]["content"][0]["text"] == "eng-bot", called
        # the exemption is exactly the own login: the viewer still cannot act on anything else
        for path in ("/api/auth/notes/login", "/api/auth/notes/logout", "/api/servers/notes/restart"):
            denied = http.post(gateway.base + path)
            assert denied.status_code == 403 and denied.json()["role"] == "viewer", (path, denied.text)
        # logging out forgets the login and closes the open session: the next call asks again
        forgot = http.delete(gateway.base + "/api/auth/notes/login/me")
        assert forgot.status_code == 200 and forgot.json()["removed"] is True, forgot.text
        assert _mine(http, gateway) == {"notes": False}
        again = _call_whoami(gateway, viewer)["error"]
        assert again["code"] == -32003 and "login_url" in again["data"], again


def test_a_caller_without_a_user_is_refused_with_the_reason(served_gateway: Served) -> None:
    gateway, idp, _ = served_gateway
    for method in ("POST", "DELETE"):
        answer = httpx2.request(
            method,
            gateway.base + "/api/auth/notes/login/me",
            headers={"Authorization": f"Bearer {TOKEN}"},  # the static token: the operator, no user
            timeout=15,
        )
        assert answer.status_code == 400, answer.text
        assert "needs a user" in answer.json()["error"] and answer.json()["caller"] == "api:-", answer.text
    assert gateway.get("/api/auth/me").status_code == 400
    # a token with no role here is refused before the route (the exemption is for viewers, not strangers)
    with _as(idp.token("stranger")) as http:
        assert http.post(gateway.base + "/api/auth/notes/login/me").status_code == 403
    # a server that is not there is named
    with _as(idp.token("ops-bot")) as http:
        missing = http.post(gateway.base + "/api/auth/nowhere/login/me")
        assert missing.status_code == 404 and "nowhere" in missing.json()["error"], missing.text


def test_a_viewer_clicks_log_in_as_me_and_then_log_out(page: Page, served_gateway: Served) -> None:
    gateway, _, peer = served_gateway
    provider_login(page, gateway, "bob")
    row = page.locator('#servers-table tr[data-server="notes"]')
    expect(page.locator("#role-badge")).to_have_text("viewer")
    expect(row.locator("[data-own-login]")).to_have_attribute("data-own-login", "no")
    expect(row.locator("button[data-action]")).to_have_count(1)  # only the own login: no admin actions
    peer.next_subject("bob")
    with page.context.expect_page() as opened:
        row.locator('button[data-action="login-me"]').click()
    tab = opened.value
    tab.wait_for_url(gateway.base + "/oauth/callback*")
    assert "Logged in to notes" in tab.content()
    assert tab.evaluate("window.opener") is None  # the authorization server's page had no handle on ours
    expect(row.locator("[data-own-login]")).to_have_attribute("data-own-login", "yes", timeout=10_000)
    mine = page.evaluate("""async () => (await (await fetch("/api/auth/me")).json())""")
    assert mine == {
        "user": "user:bob",
        "servers": [{"server": "notes", "logged_in": True, "token_exchange": False}],
    }
    row.locator('button[data-action="logout-me"]').click()
    expect(row.locator("[data-own-login]")).to_have_attribute("data-own-login", "no")


def test_an_admins_own_login_is_what_her_calls_from_the_page_carry(
    page: Page, served_gateway: Served, tmp_path: Path
) -> None:
    gateway, _, peer = served_gateway
    provider_login(page, gateway, "alice")
    row = page.locator('#servers-table tr[data-server="notes"]')
    expect(page.locator("#role-badge")).to_have_text("admin")
    peer.next_subject("alice")
    with page.context.expect_page() as opened:
        row.locator('button[data-action="login-me"]').click()
    opened.value.wait_for_url(gateway.base + "/oauth/callback*")
    expect(row.locator("[data-own-login]")).to_have_attribute("data-own-login", "yes", timeout=10_000)
    # a tool she tries from the page runs as her: the upstream sees her own token, not the operator's
    tried = page.evaluate(
        """async () => (await (await fetch("/api/tools/notes.whoami/call", {method: "POST",
               headers: {"content-type": "application/json"}, body: '{"arguments": {}}'})).json())"""
    )
    assert tried["content"][0]["text"] == "alice", tried
    assert gateway.call("notes.whoami").json()["content"][0]["text"] == "operator"  # the static token
