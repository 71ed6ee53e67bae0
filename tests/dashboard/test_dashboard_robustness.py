"""The dashboard and /metrics keep working while an upstream crash-loops; the token leaks nowhere."""

from __future__ import annotations

import time

import httpx2
from playwright.sync_api import Page, expect
from prometheus_client.parser import text_string_to_metric_families

from dashboard.conftest import TOKEN, XIAOZHI_TOKEN, login
from support.served_gateway import ServedGateway


def _families(gateway: ServedGateway) -> dict[str, list[tuple[dict[str, str], float]]]:
    answer = gateway.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        family.name: [(sample.labels, sample.value) for sample in family.samples]
        for family in text_string_to_metric_families(answer.text)
    }


def _value(families: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    for sample_labels, value in families[name]:
        if all(sample_labels.get(k) == v for k, v in labels.items()):
            return value
    raise AssertionError(f"no {name} sample with {labels}: {families[name]}")


def test_metrics_scrape_while_an_upstream_crash_loops(guarded: ServedGateway, page: Page) -> None:
    guarded.call("f.echo", {"text": "x"})
    first = _families(guarded)
    restarts_before = _value(first, "nexus_upstream_restarts", server="loop")
    login(page, guarded)
    deadline = time.monotonic() + 20
    scrapes = 0
    while time.monotonic() < deadline:
        families = _families(guarded)
        scrapes += 1
        if _value(families, "nexus_upstream_restarts", server="loop") >= restarts_before + 2:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the crash-looping upstream was not seen restarting")
    assert scrapes >= 1
    assert _value(families, "nexus_tool_calls", tool="f.echo") >= 1
    assert _value(families, "nexus_upstream_up", server="f") == 1
    assert _value(families, "nexus_upstream_rss_bytes", server="f") > 1_000_000
    assert _value(families, "nexus_upstream_state", server="f", state="READY") == 1
    assert {
        "nexus_tool_latency_seconds",
        "nexus_server_calls",
        "nexus_frontend_calls",
        "nexus_cache_entries",
    } <= set(families)
    # The dashboard still answers and shows the loop (it may be in any state of its cycle).
    page.reload()
    expect(page.locator('#servers-table tr[data-server="loop"]')).to_be_visible()
    expect(page.locator('#servers-table tr[data-server="f"] .state')).to_have_text("READY")
    assert guarded.get("/api/metrics").json()["upstreams"]["loop"]["restarts"] >= restarts_before + 2


def test_the_token_is_in_no_page_log_or_metric(guarded: ServedGateway, page: Page) -> None:
    login(page, guarded)
    sources = []
    for name in ("servers", "tools", "calls", "metrics", "xiaozhi", "tasks"):
        page.goto(f"{guarded.base}/#{name}")
        page.wait_for_selector(f"#page-{name}:not([hidden])")
        sources.append(page.content())
    for path in ("/", "/ui/static/app.js", "/ui/static/charts.js", "/ui/static/style.css", "/login"):
        sources.append(
            httpx2.get(guarded.base + path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).text
        )
    for path in ("/metrics", "/api/metrics", "/api/dashboard", "/api/calls"):
        sources.append(guarded.get(path).text)
    sources.append(guarded.log.read_text())
    for text in sources:
        assert TOKEN not in text
        assert XIAOZHI_TOKEN not in text
    # Static files carry no data and need no token; the data does.
    assert httpx2.get(guarded.base + "/ui/static/app.js", timeout=10).status_code == 200
    for path in ("/metrics", "/api/metrics", "/api/events", "/api/dashboard"):
        assert httpx2.get(guarded.base + path, timeout=10).status_code == 401, path
