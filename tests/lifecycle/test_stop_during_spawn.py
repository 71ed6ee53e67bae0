"""A stop that lands while a server is being started, or spawned, still leaves no process behind.

Each test puts the stop at one exact moment of a start (no timing luck): before the start's
task has run, while the child is being forked, while the gateway's start is half-way. The
servers are `stubborn_server.py` (they ignore SIGTERM and stdin end-of-file and never answer
`initialize`), so one that got started behind the stop's back is still there afterwards.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from mcp_nexus.runtime import Runtime, RuntimeOptions
from mcp_nexus.upstream import child_process
from mcp_nexus.upstream.child_process import StopGrace
from mcp_nexus.upstream.supervisor import Supervisor
from mcp_nexus.upstream.upstream import Upstream
from support.gateway import load, server_config
from support.orphans import STUBBORN, describe, marked, stubborn

STARTUP_TIMEOUT_S = 20.0  # a start that got through would hold its caller this long
BOUND_S = 5.0  # what a start that was stopped may take to return, at most


async def _turns(count: int) -> None:
    """Let the event loop run `count` turns (every ready task takes a step in each)."""
    for _ in range(count):
        await asyncio.sleep(0)


@pytest.mark.parametrize("how", ["close", "stop"])
async def test_a_stop_before_a_start_has_run_wins(run_id: str, how: str) -> None:
    """`start()` asked for, then `stop()`/`close()` before the start's task took its first step."""
    upstream = Upstream(server_config("s", stubborn(run_id, initialize_after="never", launcher=True)))
    supervisor = Supervisor(upstream, startup_timeout=STARTUP_TIMEOUT_S)
    starting = asyncio.ensure_future(supervisor.start())
    try:
        await (supervisor.close() if how == "close" else supervisor.stop())
        await asyncio.wait_for(starting, BOUND_S)  # a start that spawned would wait for initialize
        assert not upstream.connecting and not upstream.has_session, upstream.state
        assert not marked(run_id), f"started after the {how}: {describe(marked(run_id))}"
    finally:
        starting.cancel()
        await upstream.stop()


async def test_a_stop_after_a_start_waiting_for_the_lock_wins(run_id: str) -> None:
    """A start queued behind a start in progress must not run once a later stop took over."""
    upstream = Upstream(server_config("s", stubborn(run_id, initialize_after="never", launcher=True)))
    supervisor = Supervisor(upstream, startup_timeout=STARTUP_TIMEOUT_S)
    first = asyncio.ensure_future(supervisor.start())  # holds the lock: its server never initializes
    await _turns(1)
    assert upstream.connecting
    queued = asyncio.ensure_future(supervisor.start())
    await _turns(1)  # now waiting for the lock
    try:
        # The stop aborts the first start; the queued one must not get the lock before it.
        await asyncio.wait_for(supervisor.stop(), BOUND_S)
        await asyncio.wait_for(asyncio.gather(first, queued), BOUND_S)
        assert not upstream.connecting and not upstream.has_session, upstream.state
        assert not marked(run_id), describe(marked(run_id))
    finally:
        first.cancel()
        queued.cancel()
        await upstream.stop()


async def test_terminate_all_ends_a_server_whose_spawn_is_in_flight(run_id: str) -> None:
    """The safety net of a stop runs while a child is being forked: it waits for it and ends it."""
    argv = [sys.executable, str(STUBBORN), f"--nexus-orphan-marker={run_id}", "--initialize-after", "never"]
    spawning = asyncio.ensure_future(
        child_process.spawn(
            argv, env=None, cwd=None, stderr=subprocess.DEVNULL, grace=StopGrace(stdin=0.1, term=0.2)
        )
    )
    await _turns(1)  # the spawn now waits for its pipes: forked, not registered yet
    assert not spawning.done()
    await asyncio.wait_for(child_process.terminate_all(), BOUND_S)
    process = await asyncio.wait_for(spawning, BOUND_S)
    assert process.returncode is not None, "terminate_all() returned with the new server running"
    assert process.pid not in child_process.live_groups()
    assert not marked(run_id), describe(marked(run_id))


async def test_a_runtime_cancelled_while_starting_leaves_no_start_behind(
    run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The main task cancelled half-way through startup (asyncio.Runner does it on an early Ctrl-C).

    The gateway's start is held at its first await; the cancel comes then. The runtime must
    finish that start before it stops the gateway: one that went on afterwards would spawn
    the servers of a gateway already stopped, with nobody left to stop them.
    """
    config = load(
        {
            "gateway": {"include_builtins": False, "startup_timeout": STARTUP_TIMEOUT_S},
            "servers": {"hung": stubborn(run_id, initialize_after="never", launcher=True)},
        }
    )
    runtime = Runtime(config, RuntimeOptions(http=False, bridge=False, watch=False, signals=False))
    gateway = runtime.gateway
    entered, gate = asyncio.Event(), asyncio.Event()
    start_stores = gateway.stores.start

    async def held_start() -> Any:
        entered.set()
        await gate.wait()
        return await start_stores()

    monkeypatch.setattr(gateway.stores, "start", held_start)
    entering = asyncio.ensure_future(runtime.__aenter__())
    try:
        await asyncio.wait_for(entered.wait(), BOUND_S)
        entering.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(entering, BOUND_S)
        gate.set()  # a start still running would now go on and start the server
        await _turns(20)
        upstream = gateway.upstreams["hung"]
        assert not upstream.connecting and not upstream.has_session, upstream.state
        assert not marked(run_id), describe(marked(run_id))
    finally:
        gate.set()
        await gateway.stop()
