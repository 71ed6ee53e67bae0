"""Ctrl-C on an idle `nexus serve` ends it in well under a second, its servers with it.

It once took 1.2-3 s: a connected MCP client's idle listening stream (GET /mcp) held uvicorn's
shutdown for its whole graceful timeout. The gateway now closes its HTTP sessions once the calls
in flight are drained. The exit status stays 0 (documented in `nexus serve -h`): a gateway asked
to stop that stops cleanly has not failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import httpx2
import psutil
import pytest

from cli.serve_process import TOKEN, Served, serving
from lifecycle.faults import faulty

PROMPT = 1.5  # seconds from the (last) SIGINT to the exit
PROTOCOL = "2025-06-18"


def open_listening_stream(served: Served) -> threading.Event:
    """An MCP client's session with its GET stream open, as the Inspector or a desktop client keeps."""
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "authorization": f"Bearer {TOKEN}",
    }
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    answer = httpx2.post(served.mcp_url, headers=headers, json=initialize, timeout=30)
    assert answer.status_code == 200, answer.text
    headers |= {"mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(served.mcp_url, headers=headers, json=initialized, timeout=30).status_code == 202
    listening = threading.Event()

    def listen() -> None:
        try:
            with httpx2.stream("GET", served.mcp_url, headers=headers, timeout=60) as stream:
                assert stream.status_code == 200
                listening.set()
                for _ in stream.iter_bytes():
                    pass
        except httpx2.HTTPError:
            pass

    threading.Thread(target=listen, daemon=True).start()
    assert listening.wait(30), "the GET stream did not open"
    return listening


def signal_and_time(served: Served, *, group: bool, times: int = 1) -> tuple[int, float]:
    """SIGINT (to the process, or to its group as a terminal's Ctrl-C does) `times` times, 0.3 s
    apart; the exit status and the seconds from the last signal to the exit."""
    for sent in range(times):
        if sent:
            time.sleep(0.3)
        if group:
            os.killpg(served.proc.pid, signal.SIGINT)
        else:
            served.proc.send_signal(signal.SIGINT)
    last = time.monotonic()
    try:
        code = served.proc.wait(timeout=30)
    except Exception:
        raise AssertionError(
            f"still running 30 s after SIGINT: {served.stderr.read_text()[-3000:]}"
        ) from None
    return code, time.monotonic() - last


def assert_no_orphans(children: list[psutil.Process]) -> None:
    deadline = time.monotonic() + 2
    alive = children
    while alive and time.monotonic() < deadline:
        alive = [c for c in alive if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.05)
    assert not alive, f"left behind: {[(c.pid, c.cmdline()) for c in alive]}"


@pytest.mark.parametrize("group", [False, True], ids=["kill -INT", "terminal Ctrl-C"])
def test_ctrl_c_on_an_idle_gateway_with_a_listening_client_returns_at_once(
    tmp_path: Path, group: bool
) -> None:
    with serving(tmp_path, {"f": faulty("f"), "g": faulty("g")}, "--wait-ready") as served:
        open_listening_stream(served)
        children = psutil.Process(served.proc.pid).children(recursive=True)
        assert len(children) >= 2, children  # the two stdio servers
        code, took = signal_and_time(served, group=group)
        log = served.stderr.read_text()
        assert code == 0, log[-3000:]
        assert took < PROMPT, f"{took:.2f} s from SIGINT to exit: {log[-3000:]}"
        assert "Traceback" not in log and "timeout graceful shutdown exceeded" not in log, log[-3000:]
        assert_no_orphans(children)


def test_a_second_ctrl_c_stops_a_draining_gateway_at_once(tmp_path: Path) -> None:
    """A call that never ends keeps the first SIGINT draining (shutdown_grace, 10 s); the second ends it."""
    with serving(tmp_path, {"f": faulty("f")}, "--wait-ready") as served:
        open_listening_stream(served)
        children = psutil.Process(served.proc.pid).children(recursive=True)
        threading.Thread(target=lambda: _ignore_errors(served, "/api/tools/f.hang/call"), daemon=True).start()
        time.sleep(0.5)  # the call is in flight
        code, took = signal_and_time(served, group=False, times=2)
        log = served.stderr.read_text()
        assert "shutting down, letting calls in flight finish" in log and "again: stopping now" in log, log
        assert code == 0 and took < PROMPT, f"exit {code} {took:.2f} s after the second SIGINT: {log[-3000:]}"
        assert_no_orphans(children)


def _ignore_errors(served: Served, path: str) -> None:
    with contextlib.suppress(httpx2.HTTPError):  # the gateway goes away under it: expected
        served.api("POST", path, {"arguments": {}})
