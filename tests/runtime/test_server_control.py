"""Starting a hung server is bounded by startup_timeout; stopping one that is still connecting is immediate."""

from __future__ import annotations

import asyncio
import time

from lifecycle.faults import document, faulty
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running_gateway
from support.polling import eventually


def hung(name: str) -> dict[str, object]:
    return faulty(name, "--slow-start", "600", auto_start=False)


async def test_start_of_a_hung_server_ends_at_the_startup_timeout() -> None:
    async with running_gateway(document({"h": hung("h")}, startup_timeout=2)) as gw:
        started = time.monotonic()
        await gw.servers.start("h")
        took = time.monotonic() - started
        assert gw.upstreams["h"].state == UpstreamState.ERROR
        assert "2 s" in (gw.upstreams["h"].last_error or "")
        assert took < 4.5, f"start took {took:.1f} s with startup_timeout 2"


async def test_stop_cancels_a_start_at_once() -> None:
    async with running_gateway(document({"h": hung("h")}, startup_timeout=60)) as gw:
        starting = asyncio.ensure_future(gw.servers.start("h"))
        await eventually(lambda: gw.upstreams["h"].state == UpstreamState.CONNECTING)
        await asyncio.sleep(0.3)
        began = time.monotonic()
        await gw.servers.stop("h")
        took = time.monotonic() - began
        await asyncio.wait_for(starting, 5)
        assert gw.upstreams["h"].state == UpstreamState.STOPPED
        assert gw.upstreams["h"].pid is None
        assert took < 2.0, f"stop took {took:.1f} s"
