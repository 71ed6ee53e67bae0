"""A bounded version of issue 12's load run: many concurrent calls, none lost, none misrouted.

Each call carries a unique payload that the echo upstream sends back, so an answer that
reached the wrong caller (or the right caller with another's result) is caught. The full
run (10,000 calls, p50/p99, RSS before/after) is bench/load.py's job.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from robustness.gateways import ECHO_TOOL, HttpGateway, write_config
from robustness.http_client import HandshakeSession, modern_headers, modern_request, read_answer
from robustness.stdio_client import StdioGateway
from robustness.wire import id_key
from support.echo_upstream import canonical

CALLS = 2000
CONCURRENCY = 64


def payload(n: int) -> dict[str, Any]:
    return {"n": n, "nonce": uuid.uuid4().hex, "text": f"call {n} ü \U0001f600"}


def echoed_text(answer: dict[str, Any]) -> str | None:
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return None
    content = result.get("content") or [{}]
    return content[0].get("text")


@pytest.fixture
def http_gateway_for_load(tmp_path: Path) -> Iterator[HttpGateway]:
    gateway = HttpGateway(write_config(tmp_path), tmp_path / "gateway.log").wait_ready()
    try:
        yield gateway
    finally:
        gateway.stop()


def test_http_calls_at_64_concurrency_none_lost_none_misrouted(http_gateway_for_load: HttpGateway) -> None:
    gateway = http_gateway_for_load
    with httpx2.Client(timeout=15) as sync_client:
        session_headers = HandshakeSession(sync_client, gateway.mcp_url).open().headers
    failures: list[str] = []
    answered = 0

    async def run() -> None:
        nonlocal answered
        limit = asyncio.Semaphore(CONCURRENCY)
        limits = httpx2.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        async with httpx2.AsyncClient(timeout=30, limits=limits) as client:

            async def one(n: int) -> None:
                nonlocal answered
                arguments = payload(n)
                request_id = f"load-{n}"
                # half in a handshake-era session, half as stateless 2026-07-28 requests
                if n % 2:
                    message = modern_request(
                        "tools/call", {"name": ECHO_TOOL, "arguments": arguments}, request_id
                    )
                    headers = modern_headers(message)
                else:
                    message = {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "method": "tools/call",
                        "params": {"name": ECHO_TOOL, "arguments": arguments},
                    }
                    headers = session_headers
                async with limit:
                    try:
                        response = await client.post(
                            gateway.mcp_url, content=json.dumps(message), headers=headers
                        )
                    except httpx2.HTTPError as exc:
                        failures.append(f"{request_id}: lost ({type(exc).__name__}: {exc})")
                        return
                answer = read_answer(response)
                if answer.problems or len(answer.answers) != 1:
                    failures.append(f"{request_id}: lost: {answer.describe()}")
                    return
                reply = answer.answers[0]
                if reply.get("id") != request_id or echoed_text(reply) != canonical(arguments):
                    failures.append(f"{request_id}: misrouted or failed: {str(reply)[:300]}")
                    return
                answered += 1

            await asyncio.gather(*(one(n) for n in range(CALLS)))

    started = time.monotonic()
    asyncio.run(run())
    elapsed = time.monotonic() - started
    assert not failures, f"{len(failures)} of {CALLS} failed; first: {failures[:5]}"
    assert answered == CALLS
    assert gateway.alive
    print(f"HTTP: {CALLS} calls at {CONCURRENCY} concurrency in {elapsed:.1f} s ({CALLS / elapsed:.0f}/s)")


def test_stdio_calls_64_in_flight_none_lost_none_misrouted(tmp_path: Path) -> None:
    gateway = StdioGateway(write_config(tmp_path), tmp_path / "stderr.log")
    try:
        gateway.handshake()
        mark = gateway.mark()
        sent: dict[str, str] = {}  # request id -> the text its answer must carry
        started = time.monotonic()
        for n in range(CALLS):
            if n >= CONCURRENCY:  # keep 64 in flight: wait for the call sent 64 before this one
                gateway.wait_for(f"load-{n - CONCURRENCY}", mark=mark, timeout=30)
            arguments = payload(n)
            sent[f"load-{n}"] = canonical(arguments)
            gateway.send(
                {
                    "jsonrpc": "2.0",
                    "id": f"load-{n}",
                    "method": "tools/call",
                    "params": {"name": ECHO_TOOL, "arguments": arguments},
                }
            )
        for n in range(max(0, CALLS - CONCURRENCY), CALLS):
            gateway.wait_for(f"load-{n}", mark=mark, timeout=30)
        elapsed = time.monotonic() - started
        assert not gateway.problems_since(mark), gateway.problems_since(mark)[:5]
        answers = [a for a in gateway.answers_since(mark) if str(a.get("id", "")).startswith("load-")]
        by_id: dict[str, list[dict[str, Any]]] = {}
        for answer in answers:
            by_id.setdefault(id_key(answer["id"]), []).append(answer)
        lost = [rid for rid in sent if id_key(rid) not in by_id]
        doubled = [key for key, got in by_id.items() if len(got) > 1]
        misrouted = [
            rid
            for rid, text in sent.items()
            if id_key(rid) in by_id and echoed_text(by_id[id_key(rid)][0]) != text
        ]
        assert not lost and not doubled and not misrouted, (
            f"lost {len(lost)} {lost[:3]}, answered twice {len(doubled)} {doubled[:3]}, "
            f"misrouted {len(misrouted)} {misrouted[:3]}"
        )
        assert gateway.alive, gateway.death_note()
        print(f"stdio: {CALLS} calls, {CONCURRENCY} in flight, in {elapsed:.1f} s ({CALLS / elapsed:.0f}/s)")
    finally:
        gateway.stop()
