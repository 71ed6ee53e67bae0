"""Hostile HTTP clients against a real `nexus serve`: body floods, session floods, login guessing.

Shared by the robustness tests (tests/robustness/test_http_*_attacks.py) and the attack
scripts (bench/attack_bodies.py, bench/attack_sessions.py), so a figure in a test and a
figure printed by a script come from the same client. Memory is the gateway process's own
resident set, read from /proc/<pid>/status (VmRSS).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from robustness.gateways import HttpGateway, write_config

MB = 1024 * 1024
HANDSHAKE_VERSION = "2025-11-25"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def initialize_message(request_id: int | str = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "1"},
        },
    }


def vm_rss(pid: int) -> int:
    """The process's resident set in bytes, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


class RssSampler:
    """Samples a process's VmRSS in the background; `peak` is the highest seen."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.start = vm_rss(pid)
        self.peak = self.start
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(OSError):
                self.peak = max(self.peak, vm_rss(self.pid))
            await asyncio.sleep(self.interval)

    async def __aenter__(self) -> RssSampler:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        with contextlib.suppress(OSError):
            self.peak = max(self.peak, vm_rss(self.pid))


@contextlib.contextmanager
def serve(folder: Path, **settings: Any) -> Iterator[HttpGateway]:
    """A `nexus serve` on 127.0.0.1 with the given `gateway.*` settings, stopped afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    gateway = HttpGateway(write_config(folder, gateway=settings), folder / "gateway.log")
    try:
        yield gateway.wait_ready()
    finally:
        gateway.stop()


@dataclass
class BodyFlood:
    """What `body_flood` saw: a status per connection ("reset" when none came back)."""

    statuses: Counter[str] = field(default_factory=Counter)
    answered_before_body: int = 0  # answered while the client still held its whole body back
    body_bytes_sent: int = 0
    seconds: float = 0.0
    rss_start: int = 0
    rss_peak: int = 0
    rss_after: int = 0

    def summary(self) -> str:
        return (
            f"statuses {dict(sorted(self.statuses.items()))}, answered before the body: "
            f"{self.answered_before_body}, body bytes sent {self.body_bytes_sent / MB:.0f} MB, "
            f"RSS {self.rss_start / MB:.0f} -> peak {self.rss_peak / MB:.0f} -> after "
            f"{self.rss_after / MB:.0f} MB, {self.seconds:.1f} s"
        )


async def _one_body(
    port: int, head: bytes, body: bytes, patience: float, flood: BodyFlood, chunk: int = 256 * 1024
) -> None:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 20)
    except (OSError, TimeoutError):
        flood.statuses["connect failed"] += 1
        return
    status = "reset"
    try:
        writer.write(head)
        await writer.drain()
        # A server that refuses without reading answers now; one that reads waits for the body.
        try:
            line = await asyncio.wait_for(reader.readline(), patience)
        except TimeoutError:
            line = b""
            for start in range(0, len(body), chunk):
                writer.write(body[start : start + chunk])
                await writer.drain()
                flood.body_bytes_sent += min(chunk, len(body) - start)
            line = await asyncio.wait_for(reader.readline(), 30)
        else:
            flood.answered_before_body += bool(line)
        if line.startswith(b"HTTP/"):
            status = line.split(b" ", 2)[1].decode()
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        pass
    finally:
        flood.statuses[status] += 1
        writer.close()
        with contextlib.suppress(OSError, TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), 2)


async def body_flood(
    gateway: HttpGateway,
    *,
    count: int,
    size: int,
    method: str = "GET",
    path: str = "/healthz",
    headers: dict[str, str] | None = None,
    patience: float = 1.0,
    settle: float = 2.0,
) -> BodyFlood:
    """`count` connections at once, each a request declaring a `size`-byte body.

    Each sends its head, waits up to `patience` seconds for an early answer, then sends the
    whole body and reads the status line. RSS is the gateway's, before, at its peak and
    `settle` seconds after every connection closed.
    """
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{gateway.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n{extra}\r\n"
    ).encode()
    body = b" " * size
    flood = BodyFlood()
    started = time.monotonic()
    async with RssSampler(gateway.pid) as rss:
        await asyncio.gather(*(_one_body(gateway.port, head, body, patience, flood) for _ in range(count)))
    flood.seconds = time.monotonic() - started
    await asyncio.sleep(settle)
    flood.rss_start, flood.rss_peak, flood.rss_after = rss.start, rss.peak, vm_rss(gateway.pid)
    return flood


@dataclass
class SessionFlood:
    statuses: Counter[int] = field(default_factory=Counter)
    seconds: float = 0.0


async def initialize_flood(
    url: str,
    count: int,
    *,
    concurrency: int = 32,
    headers: dict[str, str] | None = None,
    local_address: str | None = None,
) -> SessionFlood:
    """`count` initializes that never send a second request (the session is left half-open)."""
    flood = SessionFlood()
    limit = asyncio.Semaphore(concurrency)
    transport = httpx2.AsyncHTTPTransport(local_address=local_address) if local_address else None
    started = time.monotonic()
    async with httpx2.AsyncClient(
        timeout=30,
        limits=httpx2.Limits(max_connections=concurrency),
        headers={**MCP_HEADERS, **(headers or {})},
        transport=transport,
    ) as client:

        async def one(number: int) -> None:
            async with limit:
                try:
                    response = await client.post(url, json=initialize_message(number))
                except httpx2.HTTPError:
                    flood.statuses[0] += 1
                    return
                flood.statuses[response.status_code] += 1

        await asyncio.gather(*(one(n) for n in range(count)))
    flood.seconds = time.monotonic() - started
    return flood


def open_session(url: str, headers: dict[str, str] | None = None, local_address: str | None = None) -> str:
    """A well-behaved client: initialize, initialized, tools/list; returns its session id."""
    transport = httpx2.HTTPTransport(local_address=local_address) if local_address else None
    with httpx2.Client(timeout=15, headers={**MCP_HEADERS, **(headers or {})}, transport=transport) as client:
        response = client.post(url, json=initialize_message("init"))
        assert response.status_code == 200, f"initialize: HTTP {response.status_code} {response.text[:300]}"
        session = response.headers["mcp-session-id"]
        in_session = {"Mcp-Session-Id": session, "MCP-Protocol-Version": HANDSHAKE_VERSION}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(url, json=note, headers=in_session).status_code == 202
        listing = client.post(
            url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=in_session
        )
        assert listing.status_code == 200, f"tools/list: HTTP {listing.status_code} {listing.text[:300]}"
        return session


def session_alive(url: str, session: str, headers: dict[str, str] | None = None) -> bool:
    """Whether `session` still answers a ping (404 once it was closed)."""
    in_session = {**MCP_HEADERS, **(headers or {}), "Mcp-Session-Id": session}
    in_session["MCP-Protocol-Version"] = HANDSHAKE_VERSION
    response = httpx2.post(url, json={"jsonrpc": "2.0", "id": "p", "method": "ping"}, headers=in_session)
    return response.status_code == 200


def open_sessions(base: str, headers: dict[str, str] | None = None) -> int:
    """The gateway's own count of open HTTP sessions (`/api/frontends`)."""
    response = httpx2.get(base + "/api/frontends", headers=headers or {}, timeout=10)
    response.raise_for_status()
    return int(response.json()["frontends"]["http"]["sessions"])
