"""The dashboard and admin API log in through a real OpenID provider (issue 26), with roles.

One provider (npm `oidc-provider`, its own login form) and one `nexus serve` per module; the
browser is headless Chromium. alice (group ops) is admin, bob (group eng) viewer, mallory
nobody; the static token keeps working as admin.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import Page, expect

from dashboard.oidc_login_peer import TOKEN, LoginIdp, gateway_with_login
from support.served_gateway import ServedGateway


@pytest.fixture(scope="module")
def login_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedGateway, LoginIdp]]:
    with gateway_with_login(tmp_path_factory.mktemp("dash-oidc")) as pair:
        yield pair


def provider_login(page: Page, gateway: ServedGateway, user: str) -> None:
    """Log in as `user` through the provider's own form, as a person would."""
    page.goto(gateway.base + "/")
    page.click("#oidc-login")
    page.fill("input[name=login]", user)
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    page.click("button[type=submit]")  # the provider's consent page: Continue


def test_an_admin_logs_in_through_the_provider_and_restarts_a_server(
    page: Page, login_gateway: tuple[ServedGateway, LoginIdp]
) -> None:
    gateway, _ = login_gateway
    page.goto(gateway.base + "/")
    expect(page.locator("#oidc-login")).to_have_text("Log in with Test IdP")
    expect(page.locator("#token")).to_be_visible()  # the static token stays offered beside it
    provider_login(page, gateway, "alice")
    page.wait_for_selector("#servers-table tbody tr")
    expect(page.locator("#whoami")).to_contain_text("Alice Ops")
    expect(page.locator("#role-badge")).to_have_text("admin")
    cookie = next(c for c in page.context.cookies() if c["name"] == "nexus_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax" and not cookie["secure"]  # loopback http
    page.click('#servers-table button[data-server="f"][data-action="restart"]')
    expect(page.locator("#toast")).to_contain_text("f:")
    # a tool alice tries from the page runs as her (her user, not the page's login) in the audit log
    tried = page.evaluate(
        """async () => (await fetch("/api/tools/f.echo/call", {method: "POST",
               headers: {"content-type": "application/json"}, body: '{"arguments": {"text": "hi"}}'})).status"""
    )
    assert tried == 200
    gateway.wait_for(
        "alice's tool call in the audit log",
        lambda: (
            [r["tool"] for r in gateway.get("/api/audit?kind=tool_call&who=user:alice").json()["records"]]
            == ["f.echo"]
        ),
        timeout=10,
    )
    # the admin action is in the audit log under alice's name, on the Audit page
    page.goto(gateway.base + "/#audit")
    page.fill("#audit-who", "alice")
    page.fill("#audit-tool", "restart")
    page.click("#audit-apply")
    row = page.locator('#audit-table tbody tr[data-who="user:alice"]').first
    expect(row).to_contain_text("POST /api/servers/f/restart")
    expect(page.locator("#audit-verify")).to_contain_text("chain ok")
    page.fill("#audit-who", "nobody-by-that-name")
    page.click("#audit-apply")
    expect(page.locator("#audit-table tbody tr")).to_have_count(0)
    expect(page.locator("#audit-empty")).to_be_visible()


def test_a_viewer_sees_no_actions_and_the_api_refuses_them(
    page: Page, login_gateway: tuple[ServedGateway, LoginIdp]
) -> None:
    gateway, _ = login_gateway
    provider_login(page, gateway, "bob")
    page.wait_for_selector('#servers-table tbody tr[data-server="f"]')
    expect(page.locator("#role-badge")).to_have_text("viewer")
    expect(page.locator("#servers-table button[data-action]")).to_have_count(0)
    expect(page.locator("#reload-config")).to_be_hidden()
    # the API refuses what the page hides: the same request the button would send
    answer = page.evaluate(
        """async () => { const r = await fetch("/api/servers/f/restart", {method: "POST"});
                         return {status: r.status, body: await r.json()}; }"""
    )
    assert answer["status"] == 403, answer
    assert answer["body"]["role"] == "viewer" and "admin role" in answer["body"]["error"], answer
    assert "user:bob" in answer["body"]["error"]
    # reading is allowed
    reads = page.evaluate("""async () => (await fetch("/api/servers")).status""")
    assert reads == 200
    # the refused attempt is audited as denied, with bob's name
    gateway.wait_for(
        "bob's denied restart in the audit log",
        lambda: any(
            r["action"] == "POST /api/servers/f/restart"
            for r in gateway.get("/api/audit?who=bob&outcome=denied").json()["records"]
        ),
        timeout=10,
    )


def test_an_account_without_a_role_is_refused(
    page: Page, login_gateway: tuple[ServedGateway, LoginIdp]
) -> None:
    gateway, _ = login_gateway
    provider_login(page, gateway, "mallory")
    expect(page.locator(".error")).to_contain_text("'mallory' has no role on this gateway")
    assert not [c for c in page.context.cookies() if c["name"] == "nexus_session"]


def test_the_static_token_still_works(page: Page, login_gateway: tuple[ServedGateway, LoginIdp]) -> None:
    gateway, _ = login_gateway
    assert gateway.post("/api/servers/f/restart").status_code == 200  # bearer: admin
    page.goto(gateway.base + "/login")
    page.fill("#token", TOKEN)
    page.click("#token-form button[type=submit]")
    page.wait_for_selector('#servers-table button[data-server="f"][data-action="restart"]')


def test_access_tokens_get_the_same_roles_on_the_admin_api(
    login_gateway: tuple[ServedGateway, LoginIdp],
) -> None:
    gateway, idp = login_gateway

    def post(token: str) -> httpx2.Response:
        return httpx2.post(
            gateway.base + "/api/cache/clear",
            json={},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    admin, viewer, stranger = idp.token("ops-bot"), idp.token("eng-bot"), idp.token("stranger")
    assert post(admin).status_code == 200
    refused = post(viewer)
    assert refused.status_code == 403 and refused.json()["role"] == "viewer", refused.text
    looked = httpx2.get(
        gateway.base + "/api/servers", headers={"Authorization": f"Bearer {viewer}"}, timeout=30
    )
    assert looked.status_code == 200
    nobody = httpx2.get(
        gateway.base + "/api/servers", headers={"Authorization": f"Bearer {stranger}"}, timeout=30
    )
    assert nobody.status_code == 403 and nobody.json()["error"] == "insufficient_scope", nobody.text


def test_a_login_started_elsewhere_is_refused(
    login_gateway: tuple[ServedGateway, LoginIdp], tmp_path: Path
) -> None:
    """A callback this browser did not start (no state cookie): login CSRF is refused."""
    gateway, _ = login_gateway
    answer = httpx2.get(gateway.base + "/dashboard/oidc/callback?code=abc&state=xyz", timeout=30)
    assert answer.status_code == 400 and "state mismatch" in answer.text
    assert "set-cookie" not in answer.headers or "nexus_session=" not in answer.headers["set-cookie"]
