"""The dashboard as a person uses it, in headless Chromium against a real `nexus serve`."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import httpx2
from playwright.sync_api import Page, expect

from dashboard.conftest import TOKEN, XIAOZHI_TOKEN, login, screenshot
from support.served_gateway import ServedGateway


def test_loopback_without_a_token_opens_directly(open_gateway: ServedGateway, page: Page) -> None:
    page.goto(open_gateway.base + "/")
    expect(page.locator('#servers-table tr[data-server="f"] .state')).to_have_text("READY")
    page.goto(open_gateway.base + "/#xiaozhi")
    expect(page.locator("#xiaozhi-empty")).to_be_visible()  # no links configured on this one
    expect(page.locator("#logout-form")).to_be_hidden()
    page.goto(open_gateway.base + "/login")
    expect(page.locator(".note")).to_contain_text("no token")
    assert f"dashboard: {open_gateway.base}/" in open_gateway.log.read_text()  # `nexus serve` says where


def test_login_takes_the_token_into_a_strict_httponly_cookie(guarded: ServedGateway, page: Page) -> None:
    page.goto(guarded.base + "/")
    expect(page).to_have_url(re.compile(r"/login$"))  # redirected: no data without the token
    page.fill("#token", "not-the-token")
    page.click("button[type=submit]")
    expect(page.locator(".error")).to_contain_text("not this gateway's")
    login(page, guarded)
    expect(page).to_have_url(re.compile(r"/$"))
    cookies = page.context.cookies()
    session = next(c for c in cookies if c["name"] == "nexus_session")
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert TOKEN not in session["value"]
    assert page.evaluate("document.cookie") == ""  # page scripts cannot read it
    # The API answers the browser with the cookie, and a plain client without it gets 401.
    assert httpx2.get(guarded.base + "/api/servers", timeout=10).status_code == 401
    jar = {"nexus_session": session["value"]}
    assert httpx2.get(guarded.base + "/api/servers", cookies=jar, timeout=10).status_code == 200
    # The cookie is for the dashboard and its APIs only: MCP clients need the token itself.
    mcp = httpx2.post(guarded.base + "/mcp", cookies=jar, json={}, timeout=10)
    assert mcp.status_code == 401
    page.click("#logout-form button")
    expect(page).to_have_url(re.compile(r"/login$"))
    page.goto(guarded.base + "/#tools")
    expect(page).to_have_url(re.compile(r"/login(#tools)?$"))


def test_each_page_loads(guarded: ServedGateway, page: Page, tmp_path: Path) -> None:
    guarded.call("f.echo", {"text": "for the charts"})
    guarded.call("f.pid")
    guarded.call("f.pid")  # a cache hit
    login(page, guarded)
    expect(page.locator('#servers-table tr[data-server="f"] .state')).to_have_text("READY")
    screenshot(page, "servers", tmp_path)

    page.click('#nav a[data-page="tools"]')
    expect(page.locator('#tools-table tr[data-tool="f.echo"]')).to_be_visible()
    page.fill("#tool-search", "f.slow")  # (the crash-looping server lists a slow too, now and then)
    expect(page.locator("#tools-table tbody tr")).to_have_count(1)
    page.fill("#tool-search", "")
    page.click('#tools-table tr[data-tool="f.echo"]')
    page.fill("#arg-text", "x" * 3000)
    page.click("#try-run")
    expect(page.locator("#try-alert")).to_contain_text("SYSTEM_ALERT: Data too large")
    screenshot(page, "tools", tmp_path)

    page.click('#nav a[data-page="calls"]')
    expect(page.locator('#calls-table tr[data-tool="f.pid"]').first).to_be_visible()
    screenshot(page, "calls", tmp_path)

    page.click('#nav a[data-page="metrics"]')
    expect(page.locator('#metrics-tools tr[data-tool="f.echo"]')).to_be_visible()
    expect(page.locator("#chart-throughput svg")).to_be_visible()
    expect(page.locator('#metrics-upstreams tr[data-server="f"]')).to_contain_text("READY")
    screenshot(page, "metrics", tmp_path)

    page.click('#nav a[data-page="xiaozhi"]')
    link = page.locator("#xiaozhi-table tbody tr").first
    expect(link).to_contain_text("endpoint")
    expect(link.locator(".badge")).to_have_text("connected")
    assert XIAOZHI_TOKEN not in page.content()  # the endpoint URL's token is masked
    expect(page.locator("#frontends-table tbody tr").first).to_be_visible()
    screenshot(page, "xiaozhi", tmp_path)

    page.click('#nav a[data-page="tasks"]')
    expect(page.locator("#tasks-disabled")).to_contain_text("not enabled")  # no control plane here


def test_stop_and_start_buttons_change_the_state_live(guarded: ServedGateway, page: Page) -> None:
    login(page, guarded)
    row = page.locator('#servers-table tr[data-server="f"]')
    expect(row.locator(".state")).to_have_text("READY")
    row.locator('button[data-action="stop"]').click()
    expect(row.locator(".state")).to_have_text("STOPPED")
    assert guarded.servers()["f"]["state"] == "STOPPED"
    row.locator('button[data-action="start"]').click()
    expect(row.locator(".state")).to_have_text("READY")
    row.locator('button[data-action="disable"]').click()
    expect(row.locator(".state")).to_have_text("DISABLED")
    row.locator('button[data-action="enable"]').click()
    expect(row.locator(".state")).to_have_text("READY")
    # Changes the page did not cause arrive over the event stream (no reload, no polling).
    page.wait_for_selector("#live.on")
    guarded.post("/api/servers/f/stop")
    expect(row.locator(".state")).to_have_text("STOPPED")
    guarded.post("/api/servers/f/start")
    expect(row.locator(".state")).to_have_text("READY")


def test_try_it_runs_a_tool_through_the_pipeline(guarded: ServedGateway, page: Page) -> None:
    login(page, guarded)
    page.goto(guarded.base + "/#tools")
    page.click('#tools-table tr[data-tool="f.echo"]')
    page.fill("#arg-text", "hello from the form")
    page.click("#try-run")
    expect(page.locator("#try-output")).to_have_text("f: hello from the form")
    page.click('#tools-table tr[data-tool="f.fail"]')
    page.click("#try-run")
    expect(page.locator("#try-output")).to_contain_text("failed on purpose")


def test_a_call_appears_in_the_log_live(guarded: ServedGateway, page: Page) -> None:
    login(page, guarded)
    page.goto(guarded.base + "/#calls")
    page.wait_for_selector("#live.on")
    marker = "live-log-marker"
    caller = threading.Thread(target=lambda: guarded.call("f.echo", {"text": marker}))
    caller.start()
    caller.join(30)
    rows = page.locator('#calls-table tr[data-tool="f.echo"]')
    expect(rows.first).to_be_visible()
    page.fill("#call-filter", "f.fail")
    expect(page.locator('#calls-table tr[data-tool="f.echo"]')).to_have_count(0)
    # Arguments are never shown (they may hold secrets): the marker is nowhere on the page.
    assert marker not in page.content()


def test_tasks_page_lists_the_control_planes_tasks(
    open_gateway: ServedGateway, page: Page, tmp_path: Path
) -> None:
    created = open_gateway.post("/api/tasks", {"goal": "turn on the living room light"})
    assert created.status_code == 200, created.text
    task_id = created.json()["id"]
    open_gateway.wait_for(
        "the task to finish",
        lambda: open_gateway.get(f"/api/tasks/{task_id}").json()["status"] == "succeeded",
    )
    page.goto(open_gateway.base + "/#tasks")
    row = page.locator(f'#tasks-table tr[data-task="{task_id}"]')
    expect(row).to_contain_text("turn on the living room light")
    expect(row).to_contain_text("succeeded")
    screenshot(page, "tasks", tmp_path)
