"""The dashboard's Log in button: a server in NEEDS_AUTH offers it; it starts the login and opens
the authorization URL, which comes back to the gateway's callback, and the row turns READY.

Real parts: `nexus serve`, the OAuth-protected test server (oauth_peer.py, which approves at
once as a person saying yes would), Debian's chromium driven by playwright (headless).
"""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import sync_playwright

from oauth.oauth_peer_process import oauth_peer
from support.processes import require
from support.served_gateway import served

CHROMIUM = Path("/usr/bin/chromium")


def test_the_log_in_button_logs_a_needs_auth_server_in(tmp_path: Path) -> None:
    require(CHROMIUM)
    with oauth_peer(tmp_path / "peer.log") as peer:
        config = tmp_path / "nexus.json"
        server = {"transport": "http", "url": peer.mcp_url, "auth": "oauth"}
        config.write_text(json.dumps({"servers": {"locked": server}}))
        with served(config, tmp_path) as gateway, sync_playwright() as playwright:
            gateway.wait_state("locked", "NEEDS_AUTH")
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                context = browser.new_context()
                context.set_default_timeout(15_000)
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.goto(gateway.base + "/")
                row = page.locator('#servers-table tr[data-server="locked"]')
                row.locator('[data-state="NEEDS_AUTH"]').wait_for()
                button = row.locator('button[data-action="login"]')
                assert button.inner_text() == "log in"
                with context.expect_page() as opened:
                    button.click()
                tab = opened.value
                # The tab went to the authorization server, which sent it back to the callback.
                tab.wait_for_url(gateway.base + "/oauth/callback*")
                assert "Logged in to locked" in tab.content()
                row.locator('[data-state="READY"]').wait_for()
                assert row.locator('button[data-action="login"]').count() == 0
                assert peer.stats()["code_exchanges"] == 1
                assert not errors, errors
            finally:
                browser.close()
