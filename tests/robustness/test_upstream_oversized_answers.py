"""A hostile server's answers are read up to its `limits.message_bytes`, counted decoded.

Before, a JSON answer was read whole whatever its size (and a gzip one inflated whole), while one
SSE event over 1 MiB failed the call: a 2 MiB tool result of an SDK server in the handshake era
("Server-sent event exceeded the 1048576 byte limit"), though results that large are what offload
is for. Now every way an answer comes is read up to one limit (default 512 MiB; 4 MiB here), and the
authorization server's answers (the OAuth flow's) up to 1 MiB.

Over stdio, a line past the limit was dropped and logged, and its call waited for its timeout (30 s
by default) and then named that as the cause. Now the call fails at once, naming the limit, where
the answer's id leads the line (as the MCP SDKs write it).

Each test runs a real `nexus serve` against tests/support/oversized_answers_server.py, a real
process that streams answers of any size (never holding them); memory is the gateway's VmRSS.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from robustness.gateways import ECHO_TOOL, HttpGateway, rss_bytes, write_config
from support.polling import eventually_sync
from support.processes import TESTS, free_port, running, wait_for_port

MIB = 1024 * 1024
LIMIT = 4 * MIB
SERVER = TESTS / "support" / "oversized_answers_server.py"


def gateway_beside(folder: Path, port: int, **server: Any) -> HttpGateway:
    config = write_config(folder)
    document = json.loads(config.read_text())
    document["servers"]["big"] = {
        "transport": "http",
        "url": f"http://127.0.0.1:{port}/mcp",
        "limits": {"message_bytes": LIMIT},
        "rate_limit": None,
        "cache_ttl": 0,
        "retries": 0,
        **server,
    }
    config.write_text(json.dumps(document))
    return HttpGateway(config, folder / "gateway.log").wait_ready()


def server_row(gateway: HttpGateway, name: str) -> dict[str, Any]:
    rows = httpx2.get(f"{gateway.base}/api/servers", timeout=10).json()["servers"]
    return next(row for row in rows if row["name"] == name)


def call(gateway: HttpGateway, tool: str, arguments: dict[str, Any]) -> httpx2.Response:
    return httpx2.post(f"{gateway.base}/api/tools/{tool}/call", json={"arguments": arguments}, timeout=60)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpGateway]:
    port = free_port()
    with running([sys.executable, str(SERVER), "--port", str(port)]) as server:
        wait_for_port(port, proc=server)
        gateway = gateway_beside(tmp_path_factory.mktemp("oversized"), port)
        try:
            eventually_sync(lambda: server_row(gateway, "big")["state"] == "READY", 30, "big to be READY")
            yield gateway
        finally:
            gateway.stop()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tool", ["plain", "inflating", "event"])
def test_an_answer_past_the_limit_fails_the_call_naming_it_and_costs_no_memory(
    hostile: HttpGateway, tool: str
) -> None:
    before = rss_bytes(hostile.pid)
    started = time.monotonic()
    answer = call(hostile, f"big.{tool}", {"mib": 256})  # 64 times the limit
    took = time.monotonic() - started
    grown = rss_bytes(hostile.pid) - before
    assert answer.status_code != 200, answer.text[:300]
    assert str(LIMIT) in answer.text, answer.text[:500]  # the limit is named
    assert took < 30, took  # at the limit, not after reading 256 MiB or a timeout
    assert grown < 40 * MIB, f"the gateway grew {grown / MIB:.0f} MiB reading a {tool} answer"
    echoed = call(hostile, ECHO_TOOL, {"text": "still here"})
    assert echoed.status_code == 200 and "still here" in echoed.text, echoed.text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tool", ["plain", "inflating", "event"])
def test_an_answer_under_the_limit_passes_whole_even_past_1_mib(hostile: HttpGateway, tool: str) -> None:
    answer = call(hostile, f"big.{tool}", {"mib": 2})
    assert answer.status_code == 200, answer.text[:500]
    body = answer.json()
    assert not body.get("isError"), str(body)[:500]
    offload = body.get("_meta", {}).get("nexus/offload")  # 2 MiB is offloaded whole, to a file
    assert offload is not None and offload["bytes"] >= 2 * MIB, str(body)[:500]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_a_huge_authorization_metadata_document_is_read_up_to_1_mib(
    tmp_path: Path, content_type: str
) -> None:
    port = free_port()
    server_args = [sys.executable, str(SERVER), "--port", str(port), "--locked-metadata-mib", "256"]
    server_args += ["--metadata-content-type", content_type]  # an "event stream" is read whole there too
    with running(server_args) as server:
        wait_for_port(port, proc=server)
        gateway = gateway_beside(tmp_path, port, auth="oauth")
        try:
            before = rss_bytes(gateway.pid)

            def settled() -> bool:
                return server_row(gateway, "big")["state"] in ("ERROR", "NEEDS_AUTH")

            eventually_sync(settled, 30, "the locked server to fail its connect")
            row = server_row(gateway, "big")
            grown = rss_bytes(gateway.pid) - before
            assert "1048576" in str(row.get("last_error")), row
            assert grown < 40 * MIB, f"the gateway grew {grown / MIB:.0f} MiB reading the metadata"
            assert gateway.alive
        finally:
            gateway.stop()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("encoding", ["deflate", "raw-deflate"])
def test_deflate_with_or_without_its_header_is_inflated_within_the_limit(
    hostile: HttpGateway, encoding: str
) -> None:
    fits = call(hostile, "big.encoded", {"mib": 1, "encoding": encoding})
    assert fits.status_code == 200 and not fits.json().get("isError"), fits.text[:500]
    past = call(hostile, "big.encoded", {"mib": 64, "encoding": encoding})
    assert past.status_code != 200 and str(LIMIT) in past.text, past.text[:500]


@pytest.mark.timeout(60)
def test_an_encoding_the_gateway_did_not_ask_for_is_refused_unread(hostile: HttpGateway) -> None:
    answer = call(hostile, "big.encoded", {"mib": 1, "encoding": "br"})
    assert answer.status_code != 200, answer.text[:500]
    assert "'br'" in answer.text and "gzip, deflate" in answer.text, answer.text[:500]


@pytest.mark.timeout(120)
def test_a_stdio_answer_past_the_limit_fails_its_call_at_once_and_the_next_one_is_served(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path)
    document = json.loads(config.read_text())
    document["servers"]["bigio"] = {
        "command": sys.executable,
        "args": [str(SERVER), "--stdio"],
        "limits": {"message_bytes": LIMIT},
        "rate_limit": None,
        "cache_ttl": 0,
        "retries": 0,
    }
    config.write_text(json.dumps(document))
    gateway = HttpGateway(config, tmp_path / "gateway.log").wait_ready()
    try:
        eventually_sync(lambda: server_row(gateway, "bigio")["state"] == "READY", 30, "bigio to be READY")
        before = rss_bytes(gateway.pid)
        started = time.monotonic()
        answer = call(gateway, "bigio.plain", {"mib": 64})
        took = time.monotonic() - started
        grown = rss_bytes(gateway.pid) - before
        assert answer.status_code != 200, answer.text[:300]
        assert str(LIMIT) in answer.text and "limits.message_bytes" in answer.text, answer.text[:500]
        assert took < 15, took  # at the limit, not at the call's 30 s timeout
        assert grown < 40 * MIB, f"the gateway grew {grown / MIB:.0f} MiB reading the line"
        fits = call(gateway, "bigio.plain", {"mib": 1})  # the rest of the long line was skipped
        assert fits.status_code == 200 and not fits.json().get("isError"), fits.text[:300]
    finally:
        gateway.stop()
