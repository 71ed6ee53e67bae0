"""100 restarts of a real stdio server leave no process, fd or thread behind."""

from __future__ import annotations

import threading
import time

import pytest

from lifecycle.faults import document, faulty, live_children, open_fds, text
from mcp_nexus.errors import UnavailableError
from mcp_nexus.gateway import Gateway
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running_gateway
from support.polling import eventually


async def test_a_hundred_restarts_leak_nothing() -> None:
    quick = {"backoff_min": 0.01, "backoff_max": 0.05, "max_attempts": 3, "reset_after": 0}
    async with running_gateway(document({"f": faulty("f", restart=quick), "other": faulty("other")})) as gw:
        assert len(live_children()) == 2
        fds, threads = open_fds(), _own_threads()
        pids = set()
        started = time.monotonic()
        for i in range(100):
            if i % 2:
                await gw.servers.restart("f")
            else:  # half of them the hard way: the process dies and the supervisor brings it back
                await _crash(gw)
                await eventually(lambda: gw.upstreams["f"].state == UpstreamState.READY, what=f"restart {i}")
            pids.add(gw.upstreams["f"].pid)
        elapsed = time.monotonic() - started
        assert len(pids) == 100  # every restart really was a new process
        assert text(await gw.call_tool("f.echo", {"text": "still"})) == "f: still"
        await eventually(lambda: len(live_children()) == 2, what="children back to 2")
        await eventually(lambda: open_fds() <= fds, what=f"fds back to {fds} (now {open_fds()})")
        await eventually(
            lambda: _own_threads() <= threads, what=f"stderr threads ended (now {_own_threads()})"
        )
        print(f"100 restarts in {elapsed:.1f} s")
    await eventually(lambda: not live_children(), what="no children after stop")


def _own_threads() -> int:
    """Threads the gateway started itself; the loop's default executor keeps idle workers by design.

    Index saves run in `asyncio.to_thread`, so the executor may grow during the loop (up to its
    fixed cap) and its workers stay parked: that is a pool, not a leak.
    """
    return sum(1 for thread in threading.enumerate() if not thread.name.startswith("asyncio_"))


async def _crash(gw: Gateway) -> None:
    with pytest.raises(UnavailableError):
        await gw.call_tool("f.crash", {})
