"""Issue item 4: bodies buffered before authentication.

400 sockets each sending `GET /healthz` with a 4 MiB body took a fresh gateway from 279 to
1862 MB. Now a body the route does not take is refused unread (413), a request without the
token is refused before its body is read (401), and all bodies held at once share one budget
(gateway.request_body_budget_bytes; over it 503 with Retry-After, unread). Each test runs a
real `nexus serve` and a raw-socket client; memory is the gateway's VmRSS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from robustness.gateways import HttpGateway
from robustness.hostile_http import MB, body_flood, serve

TOKEN = "body-attack-token-0123456789"
CONCURRENT = 200
SIZE = 4 * MB


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    with serve(tmp_path_factory.mktemp("guarded"), token=TOKEN) as gateway:
        yield gateway


@pytest.mark.timeout(60)
def test_bodies_to_healthz_are_refused_unread(guarded: HttpGateway) -> None:
    flood = asyncio.run(body_flood(guarded, count=CONCURRENT, size=SIZE, settle=0.5))
    figures = flood.summary()
    assert flood.statuses == {"413": CONCURRENT}, figures
    assert flood.answered_before_body == CONCURRENT, figures  # nothing of a body was needed
    assert flood.rss_peak - flood.rss_start < 50 * MB, figures
    assert guarded.alive


@pytest.mark.timeout(60)
def test_bodies_without_the_token_are_refused_unread(guarded: HttpGateway) -> None:
    flood = asyncio.run(
        body_flood(guarded, count=CONCURRENT, size=SIZE, method="POST", path="/api/reload", settle=0.5)
    )
    figures = flood.summary()
    assert flood.statuses == {"401": CONCURRENT}, figures
    assert flood.answered_before_body == CONCURRENT, figures
    assert flood.rss_peak - flood.rss_start < 50 * MB, figures


@pytest.mark.timeout(90)
def test_bodies_a_route_takes_share_one_budget(tmp_path: Path) -> None:
    # No token (the loopback default): /mcp takes bodies from anyone, so only the budget bounds them.
    with serve(tmp_path, request_body_budget_bytes=16 * MB) as gateway:
        flood = asyncio.run(
            body_flood(gateway, count=CONCURRENT, size=SIZE, method="POST", path="/mcp", settle=0.5)
        )
        figures = flood.summary()
        # Spaces are not JSON: a body that was read is answered 400; the rest 503, unread.
        assert set(flood.statuses) <= {"400", "503"}, figures
        assert flood.statuses["503"] >= CONCURRENT // 2, figures
        assert flood.answered_before_body >= flood.statuses["503"], figures
        assert flood.rss_peak - flood.rss_start < 50 * MB, figures
        # and once the flood is over the budget is whole again: a body is read
        again = asyncio.run(body_flood(gateway, count=1, size=SIZE, method="POST", path="/mcp", settle=0))
        assert again.statuses == {"400": 1}, again.summary()
