"""A chain on the dashboard and the admin API of a real `nexus serve`: marked as a chain, with its
steps, and run from the dashboard's "try it" form (headless Debian chromium, never downloaded)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from support.governance_gateway import document, stdio
from support.processes import require
from support.served_gateway import ServedGateway, gateway_env, served

CHROMIUM = Path("/usr/bin/chromium")

CHAIN = {
    "description": "Stamp a key, then stamp the stamp.",
    "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
    "steps": [
        {"id": "first", "tool": "gov.stamp", "arguments": {"key": "{{ input.key }}"}},
        {"id": "second", "tool": "gov.stamp_args", "arguments": {"a": "{{ steps.first }}"}},
    ],
    "result": "stamped {{ steps.second }}",
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    tmp = tmp_path_factory.mktemp("chain-dash")
    doc = document(tmp / "offload", {"gov": stdio("dash")})
    doc["chains"] = {"stamp.twice": CHAIN}
    config = tmp / "nexus.json"
    config.write_text(json.dumps(doc))
    with served(config, tmp, env=gateway_env(tmp)) as gateway:
        gateway.wait_state("gov", "READY")
        yield gateway


def test_the_admin_api_lists_a_chain_with_its_steps(gateway: ServedGateway) -> None:
    rows = {row["name"]: row for row in gateway.get("/api/tools").json()["tools"]}
    assert rows["stamp.twice"]["server"] == "nexus"
    assert rows["stamp.twice"]["chain"] == {
        "kind": "steps",
        "steps": [{"id": "first", "tool": "gov.stamp"}, {"id": "second", "tool": "gov.stamp_args"}],
    }
    assert rows["gov.stamp"]["chain"] is None


def test_the_dashboard_marks_a_chain_shows_its_steps_and_runs_it(gateway: ServedGateway) -> None:
    require(CHROMIUM)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page: Page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(15_000)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(gateway.base + "/#tools")
            row = page.locator('#tools-table tr[data-tool="stamp.twice"]')
            expect(row.locator(".chip.chain")).to_have_text("chain")
            expect(page.locator('#tools-table tr[data-tool="gov.stamp"] .chip.chain')).to_have_count(0)
            row.click()
            expect(page.locator("#try-chain")).to_have_text(
                "chain: first: gov.stamp → second: gov.stamp_args"
            )
            page.fill("#arg-key", "k")
            page.click("#try-run")
            expect(page.locator("#try-output")).to_have_text("stamped dash:a=dash:k:1:b=:1")
            page.click('#tools-table tr[data-tool="gov.stamp"]')
            expect(page.locator("#try-chain")).to_be_hidden()
            assert not errors, errors
        finally:
            browser.close()
