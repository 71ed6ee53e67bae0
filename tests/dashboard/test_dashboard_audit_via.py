"""The dashboard's Audit page (issue 26) and the call log's `via` (issue 24), in headless Chromium
against a real `nexus serve` (the token gateway of conftest.py, its audit log in its data folder)."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from dashboard.conftest import login, screenshot
from support.served_gateway import ServedGateway

CODE = 'echoed = call_tool("f.echo", {"text": "from code"})\nreturn echoed'


def test_a_call_from_sandbox_code_shows_as_via_sandbox(
    guarded: ServedGateway, page: Page, tmp_path: Path
) -> None:
    answer = guarded.call("python_sandbox", {"code": CODE})
    assert answer.status_code == 200 and not answer.json().get("isError"), answer.text
    guarded.call("f.echo", {"text": "directly"})
    login(page, guarded)
    page.goto(guarded.base + "/#calls")
    rows = page.locator('#calls-table tr[data-tool="f.echo"]')
    expect(rows).to_have_count(2)
    expect(rows.locator('[data-via="sandbox"]')).to_have_count(1)
    expect(rows.locator('[data-via="client"]')).to_have_count(1)
    expect(page.locator('#calls-table tr[data-tool="python_sandbox"] [data-via="client"]')).to_have_count(1)
    screenshot(page, "calls-via", tmp_path)
    page.fill("#call-filter", "sandbox")  # the filter finds calls by where they came from
    expect(page.locator('#calls-table tr[data-tool="f.echo"]')).to_have_count(1)


def _audit_folder(gateway: ServedGateway) -> Path:
    return gateway.log.parent / "data" / "audit"  # NEXUS_DATA_DIR of gateway_env


def test_the_audit_page_filters_pages_and_shows_a_broken_chain(
    guarded: ServedGateway, page: Page, tmp_path: Path
) -> None:
    assert guarded.post("/api/cache/clear").status_code == 200  # an admin action by the operator
    for n in range(3):
        guarded.call("f.echo", {"text": f"audited {n}"})
    guarded.call("f.nope")  # an error outcome
    guarded.wait_for(
        "the calls in the audit log",
        lambda: len(guarded.get("/api/audit?tool=f.nope&kind=tool_call").json()["records"]) == 1,
        timeout=10,
    )
    login(page, guarded)
    page.goto(guarded.base + "/#audit")
    expect(page.locator("#audit-verify")).to_contain_text("chain ok")
    screenshot(page, "audit", tmp_path)
    cleared = page.locator('#audit-table tbody tr[data-who="operator"]', has_text="POST /api/cache/clear")
    expect(cleared).to_have_count(1)
    seqs = [
        int(s) for s in page.locator("#audit-table tbody tr").evaluate_all("rs => rs.map(r => r.dataset.seq)")
    ]
    assert seqs == sorted(seqs, reverse=True) and len(seqs) >= 5  # newest first
    page.select_option("#audit-outcome", "error")
    page.select_option("#audit-kind", "tool_call")
    page.click("#audit-apply")
    expect(page.locator("#audit-table tbody tr")).to_have_count(1)
    expect(page.locator("#audit-table tbody tr")).to_contain_text("f.nope")
    page.select_option("#audit-outcome", "")
    page.fill("#audit-tool", "f.echo")
    page.click("#audit-apply")
    echoes = guarded.get("/api/audit?tool=f.echo&kind=tool_call").json()["records"]
    assert len(echoes) >= 3  # this test's, and any an earlier test of this module made
    expect(page.locator("#audit-table tbody tr")).to_have_count(len(echoes))
    # a time range that ends before the first record finds nothing
    page.fill("#audit-until", "2000-01-01T00:00")
    page.click("#audit-apply")
    expect(page.locator("#audit-empty")).to_be_visible()
    # the API pages: limit, then `before` where the page ended
    first = guarded.get("/api/audit?limit=2").json()
    second = guarded.get(f"/api/audit?limit=2&before={first['next_before']}").json()
    assert [r["seq"] for r in second["records"]] == [
        first["records"][-1]["seq"] - 1,
        first["records"][-1]["seq"] - 2,
    ]
    bad = guarded.get("/api/audit?outcome=maybe")
    assert bad.status_code == 400 and "outcome must be one of" in bad.json()["error"]
    # an edited line breaks the chain at the next one, and the page says where
    [path] = sorted(_audit_folder(guarded).glob("audit-*.jsonl"))
    lines = path.read_bytes().splitlines()
    record = json.loads(lines[1])
    record["who"] = "someone else"
    lines[1] = json.dumps(record).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    page.reload()
    expect(page.locator("#audit-verify")).to_contain_text(
        f"chain broken at {path.name} line 2"
    )  # the edited one
