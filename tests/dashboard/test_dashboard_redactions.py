"""Redactions on the dashboard's Metrics page, in headless Chromium against a real `nexus serve`.

The redact step is on for one real stdio server's results and report-only for its arguments;
the page must show how many of each kind were found per server, tool and mode, and never a value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from lifecycle.faults import document, faulty
from support.served_gateway import ServedGateway, gateway_env, served

EMAIL = "ana.lopez@example.org"
PHONE = "13812345678"  # a mainland-China mobile number


@pytest.fixture(scope="module")
def redacting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    tmp = tmp_path_factory.mktemp("dash-redact")
    server = faulty("f", steps={"redact": {"results": "on", "arguments": "report"}})
    config = tmp / "nexus.json"
    config.write_text(json.dumps(document({"f": server})))
    with served(config, tmp, env=gateway_env(tmp)) as gateway:
        gateway.wait_state("f", "READY")
        yield gateway


def test_the_metrics_page_counts_redactions_per_tool_kind_and_mode_without_values(
    redacting: ServedGateway, page: Page
) -> None:
    page.goto(redacting.base + "/#metrics")
    expect(page.locator("#redactions-empty")).to_be_visible()  # nothing found yet
    expect(page.locator("#metrics-redactions")).to_be_hidden()

    answer = redacting.call("f.echo", {"text": f"write to {EMAIL} or call {PHONE}"})
    assert answer.status_code == 200, answer.text
    text = answer.json()["content"][0]["text"]
    assert EMAIL not in text and "[REDACTED:email]" in text  # results: on

    page.reload()
    table = page.locator("#metrics-redactions")
    expect(table).to_be_visible()
    expect(page.locator("#redactions-empty")).to_be_hidden()
    replaced = table.locator('tr[data-tool="f.echo"][data-kind="email"][data-mode="on"]')
    expect(replaced).to_contain_text("results")
    expect(replaced).to_contain_text("replaced")
    expect(replaced.locator("td").last).to_have_text("1")
    reported = table.locator('tr[data-tool="f.echo"][data-kind="phone"][data-mode="report"]')
    expect(reported).to_contain_text("arguments")
    expect(reported).to_contain_text("reported only")
    expect(table.locator("tbody tr")).to_have_count(4)  # email and phone, in arguments and in results
    card = page.locator("#metric-cards .card", has_text="Redactions")
    expect(card.locator(".value")).to_have_text("4")

    # Coming back to the page reads the figures again (as its 5 s refresh does), without a reload.
    redacting.call("f.echo", {"text": f"again {EMAIL}"})
    page.click('#nav a[data-page="servers"]')
    page.click('#nav a[data-page="metrics"]')
    expect(replaced.locator("td").last).to_have_text("2")
    body = page.locator("body").inner_text()
    assert EMAIL not in body and PHONE not in body
    snapshot = redacting.get("/api/metrics").json()["redactions"]
    assert snapshot["total"] == 6
    assert EMAIL not in json.dumps(snapshot)
