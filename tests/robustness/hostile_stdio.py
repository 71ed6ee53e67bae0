"""Hostile stdio upstreams behind a real `nexus serve`: a list_changed flood, a stderr flood.

Shared by the robustness tests (tests/robustness/test_upstream_floods.py) and the attack scripts
(bench/attack_list_changed.py, bench/attack_stderr.py), so a figure in a test and a figure
printed by a script come from the same attack. The gateway is measured from outside: its
resident set (VmRSS) and CPU time from /proc/<pid>, its log's size, and what the hostile server
itself counted (the tools/list refreshes it was sent).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from robustness.gateways import HttpGateway

MB = 1024 * 1024
HERE = Path(__file__).resolve().parent
SERVER = HERE / "hostile_stdio_server.py"
HANDSHAKE_VERSION = "2025-11-25"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def hostile_server(*args: str, **fields: Any) -> dict[str, Any]:
    """A server entry running hostile_stdio_server.py with `args`; `fields` are more entry keys."""
    return {"command": sys.executable, "args": [str(SERVER), *args], **fields}


def write_config(folder: Path, servers: dict[str, dict[str, Any]], **gateway: Any) -> Path:
    path = folder / "nexus.json"
    document = {
        "gateway": {
            "include_builtins": False,
            "offload_dir": str(folder / "offload"),
            "shutdown_grace": 5,
            **gateway,
        },
        "servers": servers,
    }
    path.write_text(json.dumps(document, indent=2))
    return path


@contextlib.contextmanager
def serve(folder: Path, servers: dict[str, dict[str, Any]], **gateway: Any) -> Iterator[HttpGateway]:
    folder.mkdir(parents=True, exist_ok=True)
    running = HttpGateway(write_config(folder, servers, **gateway), folder / "gateway.log")
    try:
        yield running.wait_ready()
    finally:
        running.stop()


def vm_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process itself (not its children), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def read_counts(path: Path) -> tuple[int, int]:
    """(tools/list answered, list_changed sent) as the hostile server last reported them."""
    try:
        lists, sent = path.read_text().split()
    except (OSError, ValueError):
        return 0, 0
    return int(lists), int(sent)


@dataclass
class Sample:
    rss: int
    cpu: float
    log_bytes: int
    at: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, gateway: HttpGateway) -> Sample:
        return cls(vm_rss(gateway.pid), cpu_seconds(gateway.pid), gateway.log.stat().st_size)


@dataclass
class Report:
    before: Sample
    after: Sample
    rss_peak: int
    refreshes: int = 0  # tools/list the hostile server answered during the attack
    notifications: int = 0  # list_changed it sent
    downstream: int = 0  # tools/list_changed a connected client heard
    call_latencies: list[float] = field(default_factory=list)
    unretrieved: int = 0  # "Task exception was never retrieved" in the log
    tracebacks: int = 0  # "Traceback" in the log
    server: dict[str, Any] = field(default_factory=dict)  # the hostile server's row in /api/servers

    @property
    def rss_growth(self) -> int:
        return self.after.rss - self.before.rss

    @property
    def log_growth(self) -> int:
        return self.after.log_bytes - self.before.log_bytes

    @property
    def cpu(self) -> float:
        return self.after.cpu - self.before.cpu

    @property
    def slowest_call(self) -> float:
        return max(self.call_latencies, default=0.0)

    def summary(self) -> str:
        seconds = self.after.at - self.before.at
        return (
            f"RSS {self.before.rss / MB:.0f} -> peak {self.rss_peak / MB:.0f} -> {self.after.rss / MB:.0f} MB, "
            f"CPU {self.cpu:.1f} s in {seconds:.1f} s, log +{self.log_growth / 1024:.0f} KiB, "
            f"list_changed sent {self.notifications}, tools/list refreshes {self.refreshes}, "
            f"downstream list_changed {self.downstream}, calls {len(self.call_latencies)} "
            f"(slowest {self.slowest_call * 1000:.0f} ms), never-retrieved {self.unretrieved}, "
            f"tracebacks {self.tracebacks}"
        )


class ListChangedCounter:
    """A handshake-era client on /mcp holding its GET stream open, counting tools/list_changed."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.count = 0
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ListChangedCounter:
        self._task = asyncio.create_task(self._run())
        await asyncio.wait_for(self.connected.wait(), 15)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task

    async def _run(self) -> None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=None)) as client:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "counter", "version": "1"},
                },
            }
            answer = await client.post(self.url, json=init, headers=MCP_HEADERS)
            session = answer.headers["mcp-session-id"]
            headers = {**MCP_HEADERS, "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE_VERSION}
            await client.post(
                self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
            # The first tools/list: the client now knows the list, list_changed means something.
            await client.post(
                self.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
            )
            stream_headers = {"Accept": "text/event-stream", **{k: headers[k] for k in ("Mcp-Session-Id",)}}
            stream_headers["Mcp-Protocol-Version"] = HANDSHAKE_VERSION
            async with client.stream("GET", self.url, headers=stream_headers) as stream:
                self.connected.set()
                async for line in stream.aiter_lines():
                    if line.startswith("data:") and "notifications/tools/list_changed" in line:
                        self.count += 1


async def _sample_peak(pid: int, peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError):
            peak[0] = max(peak[0], vm_rss(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)


async def _call_every(
    gateway: HttpGateway, tool: str, interval: float, latencies: list[float], stop: asyncio.Event
) -> None:
    async with httpx2.AsyncClient(timeout=60) as client:
        while not stop.is_set():
            started = time.monotonic()
            answer = await client.post(f"{gateway.base}/api/tools/{tool}/call", json={"arguments": {}})
            latencies.append(time.monotonic() - started)
            assert answer.status_code == 200, answer.text
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)


def _log_counts(gateway: HttpGateway) -> tuple[int, int]:
    text = gateway.log.read_text(errors="replace")
    return text.count("Task exception was never retrieved"), text.count("Traceback")


def server_row(gateway: HttpGateway, name: str) -> dict[str, Any]:
    answer = httpx2.get(f"{gateway.base}/api/servers/{name}", timeout=30)
    row: dict[str, Any] = answer.json()
    return row.get("server", row)


def wait_state(
    gateway: HttpGateway, name: str, states: tuple[str, ...], timeout: float = 30.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    row: dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = server_row(gateway, name)
        if row.get("state") in states:
            return row
        time.sleep(0.1)
    raise AssertionError(f"{name} never reached {states}: {row}; log:\n{gateway.log_tail(20)}")


async def list_changed_attack(folder: Path, seconds: float = 10.0, settle: float = 3.0) -> Report:
    """A server floods tools/list_changed for `seconds` (its tool list changing at every list)
    while a client listens on /mcp and another calls `h.ping` every 0.2 s."""
    counts = folder / "counts.txt"
    delay = 4.0  # the flood starts this long after the handshake: the listener connects first
    flood = ["--flood-list-changed", str(seconds), "--flood-delay", str(delay), "--changing-tools"]
    # The refreshes under a flood read at full speed: the notification budget, which would read
    # it at 1,000 a second (and hold h's answers behind it), is raised out of the way here.
    unbounded = {"notifications_per_second": 1e9, "notification_burst": 10**9}
    servers = {"h": hostile_server(*flood, "--count-file", str(counts), auto_restart=False, limits=unbounded)}
    with serve(folder, servers) as gateway:
        wait_state(gateway, "h", ("READY",))
        ready_at = time.monotonic()
        peak = [0]
        stop = asyncio.Event()
        latencies: list[float] = []
        async with ListChangedCounter(gateway.mcp_url) as counter:
            await asyncio.sleep(max(0.0, ready_at + delay - 0.5 - time.monotonic()))
            before = Sample.of(gateway)
            lists_before, _ = read_counts(counts)
            peak[0] = before.rss
            sampler = asyncio.create_task(_sample_peak(gateway.pid, peak, stop))
            caller = asyncio.create_task(_call_every(gateway, "h.ping", 0.2, latencies, stop))
            await asyncio.sleep(seconds + settle + 0.5)
            stop.set()
            await asyncio.gather(sampler, caller)
            downstream = counter.count
        after = Sample.of(gateway)
        lists, sent = read_counts(counts)
        unretrieved, tracebacks = _log_counts(gateway)
        return Report(
            before,
            after,
            max(peak[0], after.rss),
            refreshes=lists - lists_before,
            notifications=sent,
            downstream=downstream,
            call_latencies=latencies,
            unretrieved=unretrieved,
            tracebacks=tracebacks,
            server=server_row(gateway, "h"),
        )


FINAL_WORDS = "fatal: the last words after the flood"


async def stderr_attack(folder: Path, megabytes: float = 100.0, line_bytes: int = 1024) -> Report:
    """A server writes `megabytes` to stderr (lines of `line_bytes`; 0 = one line), then its last
    words, then exits with code 3; meanwhile another server's tool is called every 0.2 s."""
    servers = {
        "h": hostile_server(
            "--stderr-mb",
            str(megabytes),
            "--stderr-line-bytes",
            str(line_bytes),
            "--final-words",
            FINAL_WORDS,
            "--exit-code",
            "3",
            "--flood-delay",
            "3",
            auto_restart=False,
        ),
        "calm": hostile_server(),
    }
    with serve(folder, servers) as gateway:
        wait_state(gateway, "calm", ("READY",))
        wait_state(gateway, "h", ("READY",))
        before = Sample.of(gateway)
        peak = [before.rss]
        stop = asyncio.Event()
        latencies: list[float] = []
        sampler = asyncio.create_task(_sample_peak(gateway.pid, peak, stop))
        caller = asyncio.create_task(_call_every(gateway, "calm.ping", 0.2, latencies, stop))
        row = await asyncio.to_thread(wait_state, gateway, "h", ("CRASHED", "ERROR"), 120.0)
        await asyncio.sleep(1.0)
        stop.set()
        await asyncio.gather(sampler, caller)
        after = Sample.of(gateway)
        unretrieved, tracebacks = _log_counts(gateway)
        return Report(
            before,
            after,
            max(peak[0], after.rss),
            call_latencies=latencies,
            unretrieved=unretrieved,
            tracebacks=tracebacks,
            server=server_row(gateway, "h") or row,
        )
