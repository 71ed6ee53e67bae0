"""The dashboard at phone width, its "try it" form with nullable fields, and offloaded results
opened from the call log by their owner only; headless Chromium against a real `nexus serve`.

The gateway here has a token (each browser context is its own login), no control plane (the
Tasks page must not ask for tasks it cannot have) and the form test server
(tests/dashboard/form_server.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Response, expect

from dashboard.conftest import TOKEN, gateway_document, login, screenshot
from support.served_gateway import ServedGateway, gateway_env, served

PHONE = {"width": 420, "height": 900}
PAGES = ("servers", "tools", "calls", "metrics", "xiaozhi", "tasks")
TIMEOUT_MS = 15_000
FORM = {"transport": "embedded", "module": "dashboard.form_server:create_server"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    tmp = tmp_path_factory.mktemp("dash-phone")
    doc = gateway_document(tmp, token=TOKEN)
    doc["servers"]["form"] = FORM
    config = tmp / "nexus.json"
    config.write_text(json.dumps(doc))
    with served(config, tmp, token=TOKEN, env=gateway_env(tmp)) as served_gateway:
        served_gateway.wait_state("f", "READY")
        served_gateway.wait_state("form", "READY")
        yield served_gateway


class LoadProblems:
    """Every HTTP answer of 400 or more and every console error a page gets, as it happens."""

    def __init__(self, page: Page) -> None:
        self.seen: list[str] = []
        page.on("response", self._response)
        page.on("console", self._console)

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.seen.append(f"{response.status} {response.request.method} {response.url}")

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.seen.append(f"console: {message.text}")


def _context(browser: Browser, viewport: dict[str, int]) -> BrowserContext:
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    context.set_default_timeout(TIMEOUT_MS)
    return context


def _page_width(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_every_page_fits_a_phone_and_loads_without_errors(
    gateway: ServedGateway, browser: Browser, tmp_path: Path
) -> None:
    gateway.call("f.echo", {"text": "a call for the log and the charts"})
    context = _context(browser, PHONE)
    try:
        page = context.new_page()
        problems = LoadProblems(page)
        login(page, gateway)
        widths = {}
        for name in PAGES:
            page.goto(f"{gateway.base}/#{name}")
            page.reload()  # each page as a first load, as a person opening a bookmark
            expect(page.locator(f"#page-{name}")).to_be_visible()
            expect(page.locator("#live-text")).to_have_text("live")
            if name == "tasks":
                expect(page.locator("#tasks-disabled")).to_be_visible()  # said without asking for tasks
            if name == "tools":  # the widest view: the table and the "try it" panel
                page.click('#tools-table tr[data-tool="form.record"]')
                expect(page.locator("#try-run")).to_be_visible()
            widths[name] = _page_width(page)
            if name in ("servers", "tools"):
                screenshot(page, f"phone-{name}", tmp_path)
        assert all(width <= PHONE["width"] for width in widths.values()), widths
        assert problems.seen == []
    finally:
        context.close()


def test_the_page_would_overflow_a_phone_without_its_narrow_layout(
    gateway: ServedGateway, browser: Browser
) -> None:
    """The width check can fail: the same page with the narrow rules switched off is wider than 420 px."""
    context = _context(browser, PHONE)
    try:
        page = context.new_page()
        login(page, gateway)
        page.goto(f"{gateway.base}/#servers")
        expect(page.locator('#servers-table tr[data-server="f"]')).to_be_visible()
        page.evaluate(
            """() => { for (const sheet of document.styleSheets) for (let i = sheet.cssRules.length - 1; i >= 0; i--)
                 if (sheet.cssRules[i] instanceof CSSMediaRule) sheet.deleteRule(i); }"""
        )
        assert _page_width(page) > PHONE["width"]
    finally:
        context.close()


def _sent_arguments(page: Page) -> dict[str, Any]:
    with page.expect_request(re.compile(r"/api/tools/form\.record/call$")) as sent:
        page.click("#try-run")
    body = sent.value.post_data_json
    assert isinstance(body, dict)
    return dict(body["arguments"])


def test_try_it_leaves_empty_optional_fields_out_and_sends_null_for_a_required_nullable_one(
    gateway: ServedGateway, browser: Browser
) -> None:
    context = _context(browser, {"width": 1400, "height": 900})
    try:
        page = context.new_page()
        login(page, gateway)
        page.goto(f"{gateway.base}/#tools")
        page.click('#tools-table tr[data-tool="form.record"]')
        for field in ("#arg-note", "#arg-count", "#arg-colour", "#arg-maybe"):
            expect(page.locator(field)).to_have_value("")  # a null default is an empty field, not "null"
        page.fill("#arg-label", "first")
        assert _sent_arguments(page) == {"label": "first", "maybe": None}
        output = json.loads(page.locator("#try-output").inner_text())
        assert output == {"label": "first", "maybe": None, "note": None, "count": None, "colour": None}

        page.fill("#arg-note", "a note")
        page.fill("#arg-count", "3")
        page.select_option("#arg-colour", label="green")
        page.fill("#arg-maybe", "yes")
        assert _sent_arguments(page) == {
            "label": "first",
            "note": "a note",
            "count": 3,
            "colour": "green",
            "maybe": "yes",
        }
        expect(page.locator("#try-output")).to_contain_text('"colour": "green"')
    finally:
        context.close()


def _offload_in_the_browser(page: Page) -> str:
    page.goto(f"{page.url.split('#')[0]}#tools")
    page.click('#tools-table tr[data-tool="f.echo"]')
    page.fill("#arg-text", "y" * 3000)
    page.click("#try-run")
    expect(page.locator("#try-alert")).to_contain_text("SYSTEM_ALERT: Data too large")
    match = re.search(r"tool_output_[0-9a-f]{32}\.json", page.locator("#try-result").inner_text())
    assert match is not None
    return match.group(0)


def test_an_offloaded_result_opens_from_the_call_log_for_its_owner_only(
    gateway: ServedGateway, browser: Browser
) -> None:
    owner, other = (
        _context(browser, {"width": 1400, "height": 900}),
        _context(browser, {"width": 1400, "height": 900}),
    )
    try:
        mine = owner.new_page()
        login(mine, gateway)
        name = _offload_in_the_browser(mine)
        mine.click('#nav a[data-page="calls"]')
        row = mine.locator("#calls-table tr", has=mine.locator(f'a.open-offload[title="{name}"]'))
        expect(row).to_have_count(1)
        with owner.expect_page() as opened:
            row.locator("a.open-offload").click()
        file_page = opened.value
        file_page.wait_for_load_state()
        assert (
            file_page.locator("body").inner_text().strip() == "f: " + "y" * 3000
        )  # the echo server's answer

        theirs = other.new_page()
        login(theirs, gateway)
        theirs.goto(f"{gateway.base}/#calls")
        expect(theirs.locator('#calls-table tr[data-tool="f.echo"]').first).to_be_visible()
        expect(theirs.locator(f'a.open-offload[title="{name}"]')).to_have_count(0)  # not offered
        status = theirs.evaluate(f"fetch('/api/offload/{name}').then((r) => r.status)")
        assert status == 404  # and not served: another login's file is as absent as a missing one
        same_login = mine.evaluate(f"fetch('/api/offload/{name}').then((r) => r.status)")
        assert same_login == 200
    finally:
        owner.close()
        other.close()

    # Outside the browser: the token holder is not that login; no credentials at all is 401;
    # a name that is no offloaded file's is 400.
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx2.get(f"{gateway.base}/api/offload/{name}", headers=bearer, timeout=10).status_code == 404
    assert httpx2.get(f"{gateway.base}/api/offload/{name}", timeout=10).status_code == 401
    outside = httpx2.get(f"{gateway.base}/api/offload/..%2Fnexus.json", headers=bearer, timeout=10)
    assert outside.status_code in (400, 404) and "servers" not in outside.text


def test_a_token_client_opens_the_files_its_own_calls_offloaded(gateway: ServedGateway) -> None:
    answer = gateway.call("f.echo", {"text": "z" * 3000})
    assert answer.status_code == 200, answer.text
    name = answer.json()["_meta"]["nexus/offload"]["file"]
    opened = gateway.get(f"/api/offload/{name}")
    assert opened.status_code == 200
    assert opened.text == "f: " + "z" * 3000
    assert opened.headers["content-type"].startswith("text/plain")
    assert opened.headers["x-content-type-options"] == "nosniff"
    assert gateway.get("/api/offload/tool_output_nothex.json").status_code == 400
