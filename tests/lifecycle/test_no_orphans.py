"""No orphans: however the gateway stops, or is killed, no upstream process is left behind.

Every server here is `stubborn_server.py`: it ignores SIGTERM, SIGINT, SIGHUP and the end
of its stdin, so only a SIGKILL to it (or to its group) ends it. Half of them sit behind
`orphan_launcher.sh`, a launcher that forks the server and waits (like npx, uvx, `sh -c`):
the server is then the gateway's grandchild, which the parent-death signal does not reach.
Survivors are found by scanning /proc for each test's marker, whoever their parent is now.

The whole-gateway scenarios run a real `nexus serve` and check, besides "no survivor":
- for an orderly stop (SIGTERM, SIGINT, a second SIGINT, a failed bind): the gateway exits
  by itself, and the orphan watchdog had nothing to do (the gateway ended its groups);
- for SIGKILL: the parent-death signal and the watchdog end everything within the grace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.upstream import child_process
from mcp_nexus.upstream.child_process import ParentDeath, StopGrace
from mcp_nexus.upstream.orphan_watchdog import NOTICE, group_alive
from support.orphans import (
    LAUNCHER,
    STOP_S,
    STUBBORN,
    Serve,
    describe,
    ignores_sigterm,
    kill_marked,
    marked,
    marked_servers,
    new_run_id,
    serving,
    stubborn,
    survivors,
    wait_until,
    watchdogs_of,
)
from support.processes import TESTS, child_env, wait_for_http

EXIT_WITHIN_S = 10.0  # from the signal to the gateway's exit (its stops take STOP_S each, at once)
GONE_WITHIN_S = STOP_S + 5.0  # from the moment a stop is due to the last marked process gone
HANGING = {"startup_timeout": 20}  # a server that never initializes keeps startup going this long


def _wait_running(serve: Serve, marker: str, count: int = 1, timeout: float = 30.0) -> list[int]:
    """Wait until `count` stubborn servers marked `marker` run (the real servers, not launchers)."""
    if not wait_until(lambda: len(marked_servers(marker)) >= count, timeout):
        code = serve.proc.poll()
        raise AssertionError(
            f"{count} server(s) marked {marker} not running after {timeout} s (gateway exit code {code}); "
            f"log:\n{serve.log_text()[-3000:]}"
        )
    return marked_servers(marker)


def _wait_ready(serve: Serve) -> None:
    wait_for_http(f"http://127.0.0.1:{serve.port}/healthz", timeout=60, proc=serve.proc)


def _assert_orderly_exit(serve: Serve, signalled: float, *, expect_zero: bool = True) -> None:
    """The gateway exits by itself, nothing marked survives, and it ended its groups itself."""
    code = serve.exit_code(EXIT_WITHIN_S)
    if code is None:
        raise AssertionError(
            f"the gateway still runs {EXIT_WITHIN_S} s after the stop; log:\n{serve.log_text()[-3000:]}"
        )
    left = survivors(serve.run_id, GONE_WITHIN_S)
    took = time.monotonic() - signalled
    log = serve.log_after_watchdog()
    facts = f"exit code {code}, watchdog acted: {NOTICE in log}, survivors: {describe(left)}"
    assert not left, f"survivors {took:.1f} s after the stop ({facts})"
    if expect_zero:
        assert code == 0, f"not an orderly stop ({facts}); log:\n{log[-3000:]}"
    assert NOTICE not in log, f"the gateway left process groups for its watchdog ({facts}):\n{log[-3000:]}"


def _in_background(target: Any, *args: Any) -> threading.Thread:
    """Run a blocking admin call without waiting for it (it may block until the server starts)."""

    def quietly() -> None:
        with contextlib.suppress(Exception):  # the gateway may be stopped under it: not what we test
            target(*args)

    thread = threading.Thread(target=quietly, daemon=True)
    thread.start()
    return thread


# -- stopping the gateway ------------------------------------------------------------------


def _startup_servers(run_id: str) -> dict[str, Any]:
    """Two servers stuck in initialize (one behind a launcher) and one that comes up at once."""
    return {
        "hung": stubborn(f"{run_id}-hung", initialize_after="never"),
        "hung_l": stubborn(f"{run_id}-hung_l", initialize_after="never", launcher=True),
        "ready_l": stubborn(f"{run_id}-ready_l", launcher=True),
    }


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_startup_ends_every_server(tmp_path: Path, run_id: str, sig: signal.Signals) -> None:
    with serving(tmp_path, _startup_servers(run_id), run_id=run_id, **HANGING) as serve:
        _wait_running(serve, run_id, count=3)
        signalled = time.monotonic()
        serve.proc.send_signal(sig)
        _assert_orderly_exit(serve, signalled)


def _ready_servers(run_id: str) -> dict[str, Any]:
    return {"direct": stubborn(f"{run_id}-direct"), "launched": stubborn(f"{run_id}-launched", launcher=True)}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_after_ready_ends_every_server(tmp_path: Path, run_id: str, sig: signal.Signals) -> None:
    with serving(tmp_path, _ready_servers(run_id), run_id=run_id) as serve:
        _wait_ready(serve)
        _wait_running(serve, run_id, count=2)
        signalled = time.monotonic()
        serve.proc.send_signal(sig)
        _assert_orderly_exit(serve, signalled)


def _call_in_flight(serve: Serve, server: str, seconds: float) -> None:
    _in_background(serve.api, "POST", f"/api/tools/{server}.sleep/call", {"arguments": {"seconds": seconds}})
    assert wait_until(lambda: serve.api("GET", "/api/servers").json()["in_flight"] >= 1, 15), (
        "no call in flight"
    )


def test_sigterm_during_a_call_ends_every_server(tmp_path: Path, run_id: str) -> None:
    with serving(tmp_path, _ready_servers(run_id), run_id=run_id, shutdown_grace=1) as serve:
        _wait_ready(serve)
        _call_in_flight(serve, "launched", 60)
        signalled = time.monotonic()
        serve.proc.send_signal(signal.SIGTERM)
        _assert_orderly_exit(serve, signalled)


def test_a_second_sigint_stops_waiting_and_still_ends_every_server(tmp_path: Path, run_id: str) -> None:
    with serving(tmp_path, _ready_servers(run_id), run_id=run_id, shutdown_grace=60) as serve:
        _wait_ready(serve)
        _call_in_flight(serve, "direct", 120)
        signalled = time.monotonic()
        serve.proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert serve.proc.poll() is None, "the first SIGINT should wait for the call in flight"
        serve.proc.send_signal(signal.SIGINT)
        _assert_orderly_exit(serve, signalled, expect_zero=False)


@pytest.mark.parametrize("moment", ["startup", "ready"])
def test_sigkill_leaves_no_server_behind(tmp_path: Path, run_id: str, moment: str) -> None:
    servers = _startup_servers(run_id) if moment == "startup" else _ready_servers(run_id)
    with serving(tmp_path, servers, run_id=run_id, **HANGING) as serve:
        if moment == "ready":
            _wait_ready(serve)
        running = _wait_running(serve, run_id, count=3 if moment == "startup" else 2)
        watchdogs = watchdogs_of(serve.proc.pid)
        assert len(watchdogs) == 1, f"expected one orphan watchdog for gateway {serve.proc.pid}: {watchdogs}"
        signalled = time.monotonic()
        serve.proc.kill()
        serve.proc.wait(timeout=5)
        left = survivors(run_id, GONE_WITHIN_S)
        assert not left, f"survivors of SIGKILL: {describe(left)} (servers were {running})"
        assert wait_until(lambda: not watchdogs_of(serve.proc.pid), 5), "the watchdog did not exit"
        # The launcher's server (a grandchild) is out of the parent-death signal's reach: the
        # watchdog must have ended it, and says so on the gateway's stderr.
        assert NOTICE in serve.log_text()
        print(f"SIGKILL at {moment}: everything gone {time.monotonic() - signalled:.2f} s later")


@pytest.mark.parametrize("starting", [False, True], ids=["all-ready", "one-starting"])
def test_a_failed_bind_ends_every_server(tmp_path: Path, run_id: str, starting: bool) -> None:
    servers = _ready_servers(run_id)
    if starting:
        servers["hung_l"] = stubborn(f"{run_id}-hung_l", initialize_after="never", launcher=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with serving(tmp_path, servers, run_id=run_id, port=port, startup_timeout=3) as serve:
            # The port is bound before any server starts, so a busy port ends the gateway at
            # once, before it has anything to clean up: no server may ever have run.
            started = time.monotonic()
            code = serve.exit_code(3 + EXIT_WITHIN_S)
            log = serve.log_text()
            assert code is not None, (
                f"still running {3 + EXIT_WITHIN_S} s with its port taken; log:\n{log[-3000:]}"
            )
            assert code == 2 and "already in use" in log.lower() and f"port {port}" in log, (
                f"exit code {code}; log:\n{log[-3000:]}"
            )
            assert "--port" in log  # the hint
            left = survivors(run_id, GONE_WITHIN_S)
            assert not left, (
                f"survivors {time.monotonic() - started:.1f} s after the failed bind: {describe(left)}"
            )
            log = serve.log_after_watchdog()
            assert NOTICE not in log, f"the gateway left process groups for its watchdog:\n{log[-3000:]}"


# -- stopping one server while it starts ------------------------------------------------------


def test_reload_removing_a_starting_server_ends_it(tmp_path: Path, run_id: str) -> None:
    base = {"direct": stubborn(f"{run_id}-direct")}
    starting = stubborn(f"{run_id}-late", initialize_after="never", launcher=True)
    with serving(tmp_path, base, run_id=run_id, **HANGING) as serve:
        _wait_ready(serve)
        serve.write_config({**base, "late": starting}, **HANGING)
        _in_background(serve.api, "POST", "/api/reload")
        _wait_running(serve, f"{run_id}-late")
        serve.write_config(base, **HANGING)
        removed = time.monotonic()
        _in_background(serve.api, "POST", "/api/reload")
        left = survivors(f"{run_id}-late", GONE_WITHIN_S)
        assert not left, (
            f"a removed server still runs {time.monotonic() - removed:.1f} s later: {describe(left)}"
        )
        assert marked_servers(f"{run_id}-direct"), "the server that stayed in the config was stopped too"


@pytest.mark.parametrize("action", ["stop", "restart"])
def test_stop_or_restart_of_a_connecting_server_ends_its_processes(
    tmp_path: Path, run_id: str, action: str
) -> None:
    servers = {
        "direct": stubborn(f"{run_id}-direct"),
        "late": stubborn(f"{run_id}-late", initialize_after="never", launcher=True, auto_start=False),
    }
    with serving(tmp_path, servers, run_id=run_id, **HANGING) as serve:
        _wait_ready(serve)
        _in_background(serve.api, "POST", "/api/servers/late/start")
        _wait_running(serve, f"{run_id}-late")
        first = set(marked(f"{run_id}-late"))  # the launcher and its server
        states = {row["name"]: row["state"] for row in serve.api("GET", "/api/servers").json()["servers"]}
        assert states["late"] == "CONNECTING", states
        acted = time.monotonic()
        _in_background(serve.api, "POST", f"/api/servers/late/{action}")

        def old_ones() -> list[int]:
            return sorted(first & set(marked(f"{run_id}-late")))

        wait_until(lambda: not old_ones(), GONE_WITHIN_S)
        left = old_ones()
        assert not left, (
            f"{action} while CONNECTING: still running {time.monotonic() - acted:.1f} s later: {describe(left)}"
        )


# -- 50 stops at random moments of startup -----------------------------------------------------


def _one_random_stop(directory: Path, index: int, rng: random.Random) -> str | None:
    """Start a gateway, stop it at a random moment of its startup; returns a problem, or None."""
    run_id = new_run_id()
    servers = {
        "hung": stubborn(f"{run_id}-hung", initialize_after="never"),
        "hung_l": stubborn(f"{run_id}-hung_l", initialize_after="never", launcher=True),
        "ready_l": stubborn(
            f"{run_id}-ready_l", initialize_after=round(rng.uniform(0, 1.0), 2), launcher=True
        ),
    }
    sig = signal.SIGTERM if index % 2 == 0 else signal.SIGINT
    delay = rng.uniform(0, 1.5)
    from_launch = index % 5 == 0  # also hit the moments before and while the servers are spawned
    try:
        with serving(directory, servers, run_id=run_id, **HANGING) as serve:
            if not from_launch:
                wait_until(lambda: bool(marked(run_id)), 30, poll=0.02)
            time.sleep(delay)
            moment = f"{delay:.2f} s after {'launch' if from_launch else 'the first server process appeared'}"
            seen = len(marked(run_id))
            signalled = time.monotonic()
            serve.proc.send_signal(sig)
            code = serve.exit_code(EXIT_WITHIN_S)
            left = survivors(run_id, GONE_WITHIN_S)
            notice = NOTICE in serve.log_after_watchdog()
            took = time.monotonic() - signalled
            if left:
                return f"#{index} {sig.name} {moment}: SURVIVORS {describe(left)}"
            # Killed by the signal before it started anything is fine: there was nothing to end.
            if notice or (code != 0 and (seen or code is None)):
                why = "the watchdog had to end groups" if notice else "no watchdog needed"
                return f"#{index} {sig.name} {moment} ({seen} marked processes): exit {code}, {why}, {took:.1f} s"
            return None
    finally:
        kill_marked(run_id)


def test_fifty_stops_at_random_moments_of_startup_leave_no_survivor(tmp_path: Path) -> None:
    seed = int(os.environ.get("NEXUS_ORPHAN_SEED") or random.randrange(2**32))  # set it to replay a run
    rng = random.Random(seed)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = [
            p
            for p in pool.map(lambda i: _one_random_stop(tmp_path, i, random.Random(rng.random())), range(50))
            if p
        ]
    print(f"50 random stops in {time.monotonic() - started:.1f} s (NEXUS_ORPHAN_SEED={seed})")
    with_survivors = [p for p in problems if "SURVIVORS" in p]
    assert not with_survivors, f"NEXUS_ORPHAN_SEED={seed}\n" + "\n".join(with_survivors)
    assert not problems, f"stops that were not orderly (NEXUS_ORPHAN_SEED={seed}):\n" + "\n".join(problems)


# -- child_process, in this process -------------------------------------------------------------


def _stubborn_argv(marker: str, *, launcher: bool = False) -> list[str]:
    argv = [sys.executable, str(STUBBORN), f"--nexus-orphan-marker={marker}", "--initialize-after", "never"]
    return ["sh", str(LAUNCHER), *argv] if launcher else argv


async def _eventually(predicate: Any, timeout: float) -> bool:
    """`wait_until` for async tests: the event loop must go on (the stops run in it)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _spawn(
    marker: str, *, launcher: bool = False, parent_death: ParentDeath = "auto"
) -> asyncio.subprocess.Process:
    process = await child_process.spawn(
        _stubborn_argv(marker, launcher=launcher),
        env=None,
        cwd=None,
        stderr=subprocess.DEVNULL,
        grace=StopGrace(0.2, 0.3),
        parent_death=parent_death,
    )
    # Started means stubborn: its SIGTERM ignored, not only its command line visible (a stop
    # landing between the two found a server that still died of SIGTERM).
    assert await _eventually(
        lambda: bool(servers := marked_servers(marker)) and all(ignores_sigterm(pid) for pid in servers), 10
    ), "the server did not start"
    return process


async def test_terminate_ends_the_whole_group_once_however_often_it_is_called(run_id: str) -> None:
    launched = await _spawn(f"{run_id}-launched", launcher=True)
    direct = await _spawn(f"{run_id}-direct")
    assert {launched.pid, direct.pid} <= set(child_process.live_groups())
    started = time.monotonic()
    codes = await asyncio.gather(
        child_process.terminate(launched), child_process.terminate(launched), child_process.terminate(direct)
    )
    took = time.monotonic() - started
    assert codes[0] == codes[1] == -signal.SIGTERM  # the launcher shell dies of SIGTERM, its server does not
    assert codes[2] == -signal.SIGKILL
    assert not marked(run_id), describe(marked(run_id))
    assert 0.4 < took < 5.0, f"the stop took {took:.2f} s, expected the 0.5 s grace plus a little"
    assert await child_process.terminate(launched) == codes[0]  # again, later: nothing left to do
    assert not {launched.pid, direct.pid} & set(child_process.live_groups())


async def test_a_cancelled_terminate_still_ends_the_group(run_id: str) -> None:
    process = await _spawn(run_id, launcher=True)
    stopping = asyncio.ensure_future(child_process.terminate(process))
    await asyncio.sleep(0.05)
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert await _eventually(lambda: not marked(run_id), GONE_WITHIN_S), describe(marked(run_id))


async def test_terminate_all_ends_every_group_started_here(run_id: str) -> None:
    processes = [await _spawn(f"{run_id}-a", launcher=True), await _spawn(f"{run_id}-b")]
    await asyncio.wait_for(child_process.terminate_all(), 5.0)
    assert not marked(run_id), describe(marked(run_id))
    assert not {p.pid for p in processes} & set(child_process.live_groups())


async def test_kill_all_now_kills_every_group_at_once(run_id: str) -> None:
    processes = [await _spawn(f"{run_id}-a", launcher=True), await _spawn(f"{run_id}-b")]
    signalled = child_process.kill_all_now()
    assert {p.pid for p in processes} <= set(signalled)
    assert await _eventually(lambda: not marked(run_id), 2.0), describe(marked(run_id))
    for process in processes:  # the later orderly stop finds nothing left and returns at once
        assert await asyncio.wait_for(child_process.terminate(process), 2.0) == -signal.SIGKILL
        assert not group_alive(process.pid)


@pytest.mark.parametrize("parent_death", ["setpriv", "preexec", "none"])
async def test_a_missing_command_fails_at_spawn(parent_death: ParentDeath, tmp_path: Path) -> None:
    for command in ("/nonexistent/mcp-server", "no-such-mcp-server-on-path"):
        with pytest.raises(FileNotFoundError, match=command):
            await child_process.spawn([command], env=None, cwd=None, stderr=None, parent_death=parent_death)
    not_executable = tmp_path / "server.py"
    not_executable.write_text("")
    with pytest.raises(PermissionError):
        await child_process.spawn(
            [str(not_executable)], env=None, cwd=None, stderr=None, parent_death=parent_death
        )


# -- the gateway killed hard: each line of defence on its own ---------------------------------


def _start_parent(
    method: str, argvs: list[list[str]], then: str = "sleep"
) -> tuple[subprocess.Popen[str], list[int], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "support.spawning_parent", method, then, *(json.dumps(a) for a in argvs)],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=TESTS,
    )
    assert proc.stdout is not None
    pids = [int(proc.stdout.readline().split()[1]) for _ in argvs]
    watchdog = proc.stdout.readline().split()
    assert watchdog[0] == "watchdog" and watchdog[1].isdigit(), watchdog
    return proc, pids, int(watchdog[1])


@pytest.mark.parametrize("method", ["setpriv", "preexec"])
def test_the_parent_death_signal_alone_ends_a_direct_child(run_id: str, method: str) -> None:
    proc, [pid], watchdog = _start_parent(method, [_stubborn_argv(run_id)])
    try:
        assert wait_until(lambda: pid in marked_servers(run_id), 10)
        os.kill(watchdog, signal.SIGKILL)  # no watchdog: only the kernel's signal is left
        proc.kill()
        assert wait_until(lambda: not marked(run_id), 3.0), f"{method}: {describe(marked(run_id))}"
    finally:
        proc.kill()
        proc.wait()


def test_the_watchdog_alone_ends_direct_children_and_grandchildren(run_id: str) -> None:
    argvs = [_stubborn_argv(f"{run_id}-direct"), _stubborn_argv(f"{run_id}-launched", launcher=True)]
    proc, _pids, _watchdog = _start_parent("none", argvs)
    try:
        assert wait_until(lambda: len(marked_servers(run_id)) == 2, 10)
        killed = time.monotonic()
        proc.kill()
        assert wait_until(lambda: not marked(run_id), 0.5 + 3.0), describe(marked(run_id))
        took = time.monotonic() - killed
        _, stderr = proc.communicate(timeout=5)
        assert NOTICE in stderr and "2 server process group(s)" in stderr, stderr
        assert took >= 0.4, f"ended after {took:.2f} s: the servers did not get their grace"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("then", ["exit", "raise"])
def test_leaving_without_a_stop_still_ends_the_servers_at_exit(run_id: str, then: str) -> None:
    """A path that forgot (or never reached) the orderly stop: the interpreter's exit ends the groups."""
    argvs = [_stubborn_argv(f"{run_id}-direct"), _stubborn_argv(f"{run_id}-launched", launcher=True)]
    proc, _pids, _watchdog = _start_parent("setpriv", argvs, then=then)
    try:
        _, stderr = proc.communicate(timeout=10)
        assert wait_until(lambda: not marked(run_id), 2.0), describe(marked(run_id))
        assert "at exit: ended 2 server process group(s)" in stderr, stderr
        assert NOTICE not in stderr, stderr  # ended before the gateway was gone: nothing for the watchdog
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("method", ["setpriv", "preexec"])
def test_a_child_whose_gateway_is_already_gone_does_not_start(run_id: str, method: str) -> None:
    """The window between fork and the parent-death signal: the child checks its parent itself."""
    not_my_parent = 1  # as if the gateway had died and the child been re-parented
    argv = child_process._launch_argv(_stubborn_argv(run_id), not_my_parent, setpriv=method == "setpriv")
    preexec = child_process._preexec_parent_death(not_my_parent) if method == "preexec" else None
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, preexec_fn=preexec)
    assert proc.communicate(b"go\n", timeout=10) == (None, None)
    assert proc.returncode == child_process._PARENT_GONE_EXIT
    assert not marked(run_id)


def test_a_server_its_gateway_never_registered_does_not_start(run_id: str) -> None:
    """The gateway died between spawning and registering: stdin ends before `go`."""
    argv = child_process._launch_argv(_stubborn_argv(run_id), os.getpid(), setpriv=False)
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE)
    proc.communicate(b"", timeout=10)
    assert proc.returncode == child_process._PARENT_GONE_EXIT
    assert not marked(run_id)
