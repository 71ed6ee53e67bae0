"""Issue item 5: session slots can be filled.

10,100 initializes in 31 s made every new client get 503 for up to 30 minutes. Now a session
that sends nothing after its initialize is closed after gateway.http_session_handshake_timeout,
one client (address and credential) keeps at most gateway.http_session_max_per_client, and at
either cap the oldest idle session is closed for the new one (half-open ones first). Each test
runs a real `nexus serve` and a flood of initializes that never come back.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from robustness.hostile_http import (
    MB,
    initialize_flood,
    open_session,
    open_sessions,
    serve,
    session_alive,
    vm_rss,
)


def wait_until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


@pytest.mark.timeout(60)
def test_a_flood_of_initializes_locks_out_nobody(tmp_path: Path) -> None:
    with serve(tmp_path, http_session_max=100, http_session_max_per_client=1000) as gateway:
        before = vm_rss(gateway.pid)
        flood = asyncio.run(initialize_flood(gateway.mcp_url, 400))
        assert flood.statuses == {200: 400}, flood.statuses  # the oldest half-open ones made room
        assert open_sessions(gateway.base) <= 100
        open_session(gateway.mcp_url)  # a new client still gets a session
        assert vm_rss(gateway.pid) - before < 30 * MB


@pytest.mark.timeout(60)
def test_half_open_sessions_expire_quickly_established_ones_stay(tmp_path: Path) -> None:
    with serve(tmp_path, http_session_handshake_timeout=1.5) as gateway:
        kept = open_session(gateway.mcp_url)
        flood = asyncio.run(initialize_flood(gateway.mcp_url, 300))
        assert flood.statuses == {200: 300}, flood.statuses
        wait_until(lambda: open_sessions(gateway.base) == 1, 10, "half-open sessions to be closed")
        assert session_alive(gateway.mcp_url, kept)  # it sent a second request: the idle timeout applies


@pytest.mark.timeout(60)
def test_the_per_client_cap_closes_that_clients_oldest_idle_session(tmp_path: Path) -> None:
    with serve(tmp_path, http_session_max_per_client=3) as gateway:
        first, second, third = (open_session(gateway.mcp_url) for _ in range(3))
        assert session_alive(gateway.mcp_url, first)  # used again: `second` is now the least recent
        fourth = open_session(gateway.mcp_url)
        alive = {
            name: session_alive(gateway.mcp_url, s)
            for name, s in {"first": first, "second": second, "third": third, "fourth": fourth}.items()
        }
        assert alive == {"first": True, "second": False, "third": True, "fourth": True}, alive
        # Another address has a cap of its own: its flood closes none of these sessions...
        flood = asyncio.run(initialize_flood(gateway.mcp_url, 50, concurrency=1, local_address="127.0.0.2"))
        assert flood.statuses == {200: 50}, flood.statuses
        assert all(session_alive(gateway.mcp_url, s) for s in (first, third, fourth))
        assert open_sessions(gateway.base) == 3 + 3
        # ...and a flood from this address closes its half-open sessions before established ones.
        flood = asyncio.run(initialize_flood(gateway.mcp_url, 50, concurrency=1))
        assert flood.statuses == {200: 50}, flood.statuses
        assert sum(session_alive(gateway.mcp_url, s) for s in (first, third, fourth)) == 2
