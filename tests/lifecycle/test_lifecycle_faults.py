"""Fault injection with real processes: crashes, hangs, garbage, crash loops, noise."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from lifecycle.faults import document, faulty, text
from mcp_nexus.errors import ToolTimeoutError, UnavailableError
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running_gateway
from support.polling import eventually


async def test_crash_mid_call_fails_fast_then_the_server_comes_back() -> None:
    async with running_gateway(document({"f": faulty("f")})) as gw:
        upstream = gw.upstreams["f"]
        first_pid = upstream.pid
        started = time.monotonic()
        with pytest.raises(UnavailableError) as caught:
            await gw.call_tool("f.crash", {"code": 3})
        assert time.monotonic() - started < 1.0  # not after the 30 s call timeout
        assert "exited (code 3)" in caught.value.message
        assert caught.value.data["servers_tried"] == ["f"]
        crash = next(c for c in upstream.history if c.to_state == UpstreamState.CRASHED)
        assert crash.from_state == UpstreamState.READY and "code 3" in crash.reason
        await eventually(lambda: upstream.pid not in (None, first_pid), what="a new process")
        await eventually(lambda: upstream.state == UpstreamState.READY, what="restart")
        assert text(await gw.call_tool("f.echo", {"text": "again"})) == "f: again"
        restarted = [c for c in upstream.history if c.reason == "restart attempt 1"]
        assert len(restarted) == 1


async def test_hang_times_out_at_the_configured_time_and_others_are_not_delayed() -> None:
    servers = {"hangs": faulty("hangs", timeout=0.8), "fine": faulty("fine")}
    async with running_gateway(document(servers)) as gw:
        hung = asyncio.create_task(gw.call_tool("hangs.hang", {}))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        for i in range(20):  # the hung call must not hold these back
            assert text(await gw.call_tool("fine.echo", {"text": str(i)})) == f"fine: {i}"
        assert time.monotonic() - started < 0.5
        with pytest.raises(ToolTimeoutError) as caught:
            await hung
        elapsed = time.monotonic() - started + 0.1
        assert 0.7 <= elapsed < 1.5, elapsed
        assert "0.8 s" in caught.value.message
        assert gw.upstreams["hangs"].state == UpstreamState.READY  # a slow tool is not a dead server
        assert text(await gw.call_tool("hangs.echo", {"text": "still here"})) == "hangs: still here"


async def test_a_slow_server_does_not_delay_calls_to_others() -> None:
    async with running_gateway(document({"slow": faulty("slow"), "fast": faulty("fast")})) as gw:
        slow_calls = [asyncio.create_task(gw.call_tool("slow.slow", {"seconds": 1.5})) for _ in range(3)]
        await asyncio.sleep(0.05)
        started = time.monotonic()
        answers = await asyncio.gather(*(gw.call_tool("fast.echo", {"text": str(i)}) for i in range(10)))
        assert time.monotonic() - started < 0.5
        assert [text(a) for a in answers] == [f"fast: {i}" for i in range(10)]
        assert all(text(r) == "slow: slept 1.5" for r in await asyncio.gather(*slow_calls))


async def test_garbage_on_stdout_is_tolerated_and_a_garbage_answer_times_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "mcp_nexus.upstream")
    async with running_gateway(document({"g": faulty("g", "--garbage-on-start", timeout=0.6)})) as gw:
        upstream = gw.upstreams["g"]
        assert upstream.state == UpstreamState.READY  # noise before initialize did not stop it
        assert text(await gw.call_tool("g.garbage", {"lines": 5})) == "g: wrote 5 garbage lines"
        assert "non-JSON" in caplog.text and "this is not JSON" in caplog.text
        with pytest.raises(ToolTimeoutError):
            await gw.call_tool("g.garbage", {"lines": 2, "then": "hang"})
        assert upstream.state == UpstreamState.READY
        assert text(await gw.call_tool("g.echo", {"text": "ok"})) == "g: ok"


async def test_exit_during_initialize_is_an_error_naming_the_exit_and_is_given_up() -> None:
    restart = {"backoff_min": 0.05, "backoff_max": 0.1, "max_attempts": 3, "reset_after": 5}
    async with running_gateway(
        document(
            {"dies": faulty("dies", "--exit-during-initialize", "4", restart=restart), "fine": faulty("fine")}
        )
    ) as gw:
        upstream = gw.upstreams["dies"]
        # The first attempt's outcome, from the history: by the time the start returns (it
        # waits for "fine" too), the restart policy may already be on its next attempt.
        first = next(c for c in upstream.history if c.from_state == UpstreamState.CONNECTING)
        assert first.to_state == UpstreamState.ERROR, first
        assert "code 4" in first.reason and "dying during initialize" in first.reason, first
        supervisor = gw.supervisors["dies"]
        await eventually(lambda: supervisor.gave_up, what="giving up")
        assert upstream.state == UpstreamState.ERROR
        assert upstream.last_error.startswith("gave up after 3 restart attempts: process exited with code 4")
        attempts = [c for c in upstream.history if c.reason.startswith("restart attempt")]
        assert len(attempts) == 3
        assert gw.upstreams["fine"].state == UpstreamState.READY
        assert "dies.echo" not in gw.catalog.tools and "fine.echo" in gw.catalog.tools


async def test_crash_loop_after_ready_is_given_up_with_the_last_error(tmp_path: object) -> None:
    restart = {"backoff_min": 0.05, "backoff_max": 0.2, "max_attempts": 4, "reset_after": 30}
    server = faulty("loops", "--crash-after", "0.15", restart=restart)
    async with running_gateway(document({"loops": server})) as gw:
        upstream, supervisor = gw.upstreams["loops"], gw.supervisors["loops"]
        await eventually(lambda: supervisor.gave_up, timeout=15, what="giving up")
        assert upstream.state == UpstreamState.ERROR
        assert upstream.last_error is not None
        assert "gave up after 4 restart attempts" in upstream.last_error
        assert "code 7" in upstream.last_error
        # The child's last stderr line joins the verdict once its pipe is drained: the loss is
        # reported at once and again, fuller, when the words arrive (after gave_up on a busy machine).
        await eventually(
            lambda: "crashing after a while" in (upstream.last_error or ""), timeout=5, what="last words"
        )
        assert "gave up after 4 restart attempts" in (upstream.last_error or "")
        assert upstream.pid is None
        # An operator start clears the verdict and tries again from scratch.
        await gw.servers.start("loops")
        assert upstream.state == UpstreamState.READY and not supervisor.gave_up


async def test_stderr_noise_is_logged_per_line_and_does_not_disturb_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "mcp_nexus.upstream.stderr")
    # Every line logged: a burst above the 2,050 lines (limits.stderr_burst; the default logs 100 at
    # once, tests/robustness/test_upstream_floods.py covers the limit).
    noisy = faulty("n", "--stderr-noise", "50", limits={"stderr_burst": 5000})
    async with running_gateway(document({"n": noisy})) as gw:
        assert text(await gw.call_tool("n.noise", {"lines": 2000})) == "n: noisy"
        assert text(await gw.call_tool("n.echo", {"text": "x"})) == "n: x"
        await eventually(lambda: "noise line 1999" in caplog.text, what="stderr lines logged")
        assert "[n] startup noise 49" in caplog.text
