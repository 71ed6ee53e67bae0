"""A stdio upstream flooding notifications behind a real `nexus serve`, measured from outside.

Shared by tests/robustness/test_notification_flood_budget.py and bench/attack_notification_flood.py:
the gateway's CPU seconds over the flood (psutil), the latency of calls to a second, quiet
server meanwhile, and of a call to the flooding server itself at the end.
"""

from __future__ import annotations

import contextlib
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import psutil

from robustness.hostile_stdio import hostile_server, serve, wait_state

HERE = Path(__file__).resolve().parent
SERVER = HERE / "notification_flood_server.py"


def flood_server(method: str, delay: float, count_file: Path, **fields: Any) -> dict[str, Any]:
    args = [str(SERVER), "--method", method, "--delay", str(delay), "--count-file", str(count_file)]
    return {"command": sys.executable, "args": args, "auto_restart": False, "rate_limit": None, **fields}


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


def _call_once(base: str, tool: str) -> float:
    with httpx2.Client(timeout=30) as client:  # a client of its own: this runs in another thread
        return _call(client, base, tool)


def notification_flood(
    folder: Path, method: str = "notifications/tools/list_changed", seconds: float = 5.0, **limits: Any
) -> FloodReport:
    """`flood` writes `method` without end from 0.5 s after its handshake. Once it does, for `seconds`:
    `quiet` is called every 0.1 s and, at the start, `flood` itself once (its answer waits behind its
    flood). `limits` go to the flooding server's entry."""
    counts = folder / "sent.txt"
    servers = {
        "flood": flood_server(method, 0.5, counts, **({"limits": limits} if limits else {})),
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
            flood_latency = flood_call.result(timeout=30)
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
        )
