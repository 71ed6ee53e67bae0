"""An upstream flooding notifications behind a real `nexus serve`, measured from outside.

The flooding server is a stdio process (notification_flood_server.py) or a streamable-HTTP one
flooding its GET stream (notification_flood_http_server.py).

Shared by tests/robustness/test_notification_flood_budget.py and bench/attack_notification_flood.py:
the gateway's CPU seconds over the flood (psutil), the latency of calls to a second, quiet
server meanwhile, and of a call to the flooding server itself at the end.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import psutil

from robustness.hostile_stdio import hostile_server, serve, wait_state

HERE = Path(__file__).resolve().parent
SERVER = HERE / "notification_flood_server.py"
HTTP_SERVER = HERE / "notification_flood_http_server.py"


def flood_server(method: str, delay: float, count_file: Path, **fields: Any) -> dict[str, Any]:
    args = [str(SERVER), "--method", method, "--delay", str(delay), "--count-file", str(count_file)]
    return {"command": sys.executable, "args": args, "auto_restart": False, "rate_limit": None, **fields}


@contextlib.contextmanager
def flood_http_server(
    method: str, delay: float, count_file: Path, sse: bool = False, **fields: Any
) -> Iterator[dict[str, Any]]:
    """The HTTP flooding server running (stopped on exit), as a server entry of a config: its
    streamable-HTTP endpoint, or (`sse`) its HTTP+SSE one."""
    port_file = count_file.with_name("port.txt")
    args = [str(HTTP_SERVER), "--method", method, "--delay", str(delay), "--count-file", str(count_file)]
    process = subprocess.Popen([sys.executable, *args, "--port-file", str(port_file)])
    try:
        deadline = time.monotonic() + 15
        while not port_file.exists():
            assert process.poll() is None, f"the HTTP flooding server exited ({process.returncode})"
            assert time.monotonic() < deadline, "the HTTP flooding server never listened"
            time.sleep(0.05)
        port = int(port_file.read_text())
        place = (
            {"url": f"http://127.0.0.1:{port}/sse", "transport": "sse"}
            if sse
            else {"url": f"http://127.0.0.1:{port}/mcp"}
        )
        yield {**place, "protocol": "legacy", "auto_restart": False, "rate_limit": None, **fields}
    finally:
        process.kill()
        process.wait(timeout=10)


@dataclass
class FloodReport:
    method: str
    seconds: float  # how long the gateway was measured, the flood running throughout
    cpu: float  # the gateway's CPU seconds (user + system) over that time
    sent: int  # notifications the flooding server wrote (into the pipe) by the end
    quiet_latencies: list[float] = field(default_factory=list)
    flood_call: float = 0.0  # a call to the flooding server itself, made as the measuring began
    log: str = ""
    chatter: dict[str, Any] = field(default_factory=dict)  # the flooding server's, in /api/servers at the end
    flood_answer: str = ""  # what that call to the flooding server answered

    @property
    def cpu_share(self) -> float:
        return self.cpu / self.seconds

    @property
    def slowest_quiet(self) -> float:
        return max(self.quiet_latencies, default=0.0)

    def summary(self) -> str:
        return (
            f"{self.method}: gateway CPU {self.cpu:.2f} s in {self.seconds:.1f} s ({self.cpu_share:.0%} of a core), "
            f"{self.sent} notifications written, {len(self.quiet_latencies)} calls to the quiet server "
            f"(slowest {self.slowest_quiet * 1000:.0f} ms), a call to the flooding server "
            f"{self.flood_call * 1000:.0f} ms"
        )


def _sent(path: Path) -> int:
    with contextlib.suppress(OSError, ValueError):
        return int(path.read_text().strip() or 0)
    return 0


def _call(client: httpx2.Client, base: str, tool: str) -> float:
    started = time.monotonic()
    answer = client.post(f"{base}/api/tools/{tool}/call", json={"arguments": {}})
    elapsed = time.monotonic() - started
    assert answer.status_code == 200, answer.text
    assert "pong" in answer.text, answer.text
    return elapsed


def _call_once(base: str, tool: str) -> tuple[float, str]:
    """How long a call took and what it answered (pong, or why not), in a client of its own: this
    runs in another thread."""
    with httpx2.Client(timeout=30) as client:
        started = time.monotonic()
        answer = client.post(f"{base}/api/tools/{tool}/call", json={"arguments": {}})
        return time.monotonic() - started, answer.text


def notification_flood(
    folder: Path,
    method: str = "notifications/tools/list_changed",
    seconds: float = 5.0,
    transport: str = "stdio",
    **limits: Any,
) -> FloodReport:
    """`flood` writes `method` without end from 0.5 s after its handshake (stdio, HTTP+SSE) or after
    the gateway opened its GET stream (streamable HTTP). Once it does, for `seconds`: `quiet` is
    called every 0.1 s and, at the start, `flood` itself once. `limits` go to the flooding
    server's entry. Where the flood and the answers share one stream (stdio, HTTP+SSE), the answer
    waits behind what the stream holds: a pipe ~3 s of it at the default budget, a socket's
    buffers megabytes (minutes), so an SSE flood server's calls time out after 3 s."""
    counts = folder / "sent.txt"
    folder.mkdir(parents=True, exist_ok=True)
    fields: dict[str, Any] = {"limits": limits} if limits else {}
    if transport == "sse":
        fields["timeouts"] = {"call": 3}
    with contextlib.ExitStack() as stack:
        if transport in ("http", "sse"):
            flood = stack.enter_context(flood_http_server(method, 0.5, counts, transport == "sse", **fields))
        else:
            flood = flood_server(method, 0.5, counts, **fields)
        return _measure(folder, method, seconds, counts, flood)


def _measure(folder: Path, method: str, seconds: float, counts: Path, flood: dict[str, Any]) -> FloodReport:
    servers = {
        "flood": flood,
        "quiet": hostile_server(rate_limit=None),  # called every 0.1 s: no per-tool rate limit
    }
    with serve(folder, servers) as gateway:
        wait_state(gateway, "quiet", ("READY",))
        wait_state(gateway, "flood", ("READY",))
        deadline = time.monotonic() + 15
        while _sent(counts) == 0:  # the flood has begun
            assert time.monotonic() < deadline, "the flood never started"
            time.sleep(0.05)
        time.sleep(0.3)  # past any start-up work the first notifications cause
        process = psutil.Process(gateway.pid)
        latencies: list[float] = []
        with httpx2.Client(timeout=30) as client, ThreadPoolExecutor(1) as pool:
            before, started = process.cpu_times(), time.monotonic()
            flood_call = pool.submit(_call_once, gateway.base, "flood.ping")
            while time.monotonic() - started < seconds:
                latencies.append(_call(client, gateway.base, "quiet.ping"))
                time.sleep(0.1)
            after, ended = process.cpu_times(), time.monotonic()
            flood_latency, flood_answer = flood_call.result(timeout=35)
            servers = client.get(f"{gateway.base}/api/servers").json()["servers"]
        chatter = next(server["chatter"] for server in servers if server["name"] == "flood")
        cpu = (after.user + after.system) - (before.user + before.system)
        return FloodReport(
            method,
            ended - started,
            cpu,
            _sent(counts),
            latencies,
            flood_latency,
            gateway.log.read_text(errors="replace"),
            chatter,
            flood_answer,
        )
