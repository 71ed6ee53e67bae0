"""Hostile upstreams behind a real `nexus serve`: a list_changed flood, a stderr flood (issue items 3, 6).

Each test starts its own gateway and its own hostile stdio server (hostile_stdio_server.py) and
measures the gateway from outside: VmRSS and CPU from /proc/<pid>, its log's size, and the
tools/list refreshes the hostile server counted. bench/attack_list_changed.py and
bench/attack_stderr.py print the same figures.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from mcp_nexus.config.schema import UpstreamLimits
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.upstream.list_refresh import ListRefresh
from mcp_nexus.upstream.stderr_log import TAIL_CHARS, StderrForwarder
from robustness.hostile_stdio import FINAL_WORDS, MB, list_changed_attack, stderr_attack

FLOOD_S = 8.0


async def test_a_list_changed_flood_costs_a_bounded_number_of_refreshes(tmp_path: Path) -> None:
    report = await list_changed_attack(tmp_path, seconds=FLOOD_S, settle=2.0)
    detail = report.summary()
    assert report.notifications > 10_000, detail  # the flood happened
    # One refresh at once, then at most one a second (limits.list_refresh_interval), for the flood's
    # duration and the settle time; before: one refresh per notification (68,385 in 10 s).
    assert 1 <= report.refreshes <= FLOOD_S + 2 + 4, detail
    assert report.downstream <= report.refreshes + 2, detail  # coalesced on the way out too
    assert report.rss_growth < 50 * MB, detail
    assert report.unretrieved == 0 and report.tracebacks == 0, detail
    assert report.call_latencies and report.slowest_call < 2.0, detail
    assert report.server["state"] == "READY", detail


@pytest.mark.parametrize("line_bytes", [1024, 0], ids=["1KiB-lines", "one-line"])
async def test_100_mb_of_stderr_costs_under_1_mb_of_log_and_keeps_the_last_words(
    tmp_path: Path, line_bytes: int
) -> None:
    report = await stderr_attack(tmp_path, megabytes=100, line_bytes=line_bytes)
    detail = report.summary()
    assert report.log_growth < 1 * MB, detail  # before: 101 MB of log for 100 MB of stderr
    assert report.rss_growth < 50 * MB, detail
    assert FINAL_WORDS in (report.server.get("last_error") or ""), report.server
    assert report.server["state"] in ("CRASHED", "ERROR"), report.server
    assert report.call_latencies and report.slowest_call < 2.0, detail
    assert report.tracebacks == 0, detail


async def test_a_steady_stderr_flood_is_reported_per_interval_not_at_every_line_that_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Lines keep coming a little faster than the rate lets them through: before, each line that
    # passed brought a "not logged" report of its own (as many reports as lines logged).
    limits = UpstreamLimits(stderr_burst=5, stderr_lines_per_second=20)
    forwarder = StderrForwarder("steady", SecretRedactor([]), limits)
    with caplog.at_level(logging.INFO, logger="mcp_nexus.upstream.stderr"):
        deadline = time.monotonic() + 1.5
        sent = 0
        while time.monotonic() < deadline:
            forwarder.writer.write("".join(f"line {sent + n}\n" for n in range(10)))
            forwarder.writer.flush()
            sent += 10
            await asyncio.sleep(0.02)
        forwarder.close_parent_end()
        assert await forwarder.wait_drained(5)
    reports = [r.getMessage() for r in caplog.records if "not logged" in r.getMessage()]
    # Past the burst of 5, the rate let some through (each of them brought a report before).
    assert forwarder.lines_logged > 5, forwarder.lines_logged
    assert len(reports) == 1, reports  # once, at the end of the stream (the interval is 10 s)
    assert forwarder.lines_seen == sent
    assert f"{forwarder.lines_suppressed} stderr line(s) not logged" in reports[0]


async def test_the_forwarder_logs_a_burst_then_counts_and_cuts_long_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = UpstreamLimits(stderr_burst=5, stderr_lines_per_second=0.001, stderr_line_chars=100)
    secret = "tok-" + "S" * 30
    forwarder = StderrForwarder("noisy", SecretRedactor([secret]), limits)
    with caplog.at_level(logging.INFO, logger="mcp_nexus.upstream.stderr"):
        forwarder.writer.write("".join(f"line {n}\n" for n in range(1000)))
        forwarder.writer.write("y" * 5000 + secret + "z" * 100_000 + "\n")  # long, a secret inside
        forwarder.writer.write("the end " + secret + "\n")
        forwarder.writer.flush()
        forwarder.close_parent_end()
        assert await forwarder.wait_drained(5)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[noisy] line")]
    assert logged == [f"[noisy] line {n}" for n in range(5)]
    assert forwarder.lines_seen == 1002 and forwarder.lines_logged == 5
    assert forwarder.lines_suppressed == 997
    assert "997 stderr line(s) not logged" in caplog.text
    assert forwarder.last_words() == "the end ***SSSS"
    assert forwarder.tail[-2].startswith("y" * 100) and forwarder.tail[-2].endswith("[cut]")
    assert len(forwarder.tail[-2]) <= TAIL_CHARS + 6
    assert secret not in caplog.text and "SSSSSSSSSS" not in "".join(forwarder.tail)


async def test_list_refresh_runs_one_at_a_time_with_one_waiting() -> None:
    runs: list[float] = []
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def refresh() -> None:
        runs.append(loop.time())
        await asyncio.sleep(0.05)
        if len(runs) == 2:
            raise RuntimeError("the session went away")  # logged, never left unretrieved

    def spawn(coro: object) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        tasks.add(task)
        return task

    refresher = ListRefresh("s", "tools", refresh, lambda: 0.2, spawn)
    for _ in range(10_000):
        refresher.request()
    assert refresher.waiting  # the first one has not started yet: it covers them all
    await asyncio.sleep(0.01)
    assert not refresher.waiting
    for _ in range(10_000):
        refresher.request()
    assert refresher.waiting
    await asyncio.sleep(0.6)
    assert len(runs) == 2 and runs[1] - runs[0] >= 0.2 - 0.01
    assert len(tasks) == 1 and all(t.done() and t.exception() is None for t in tasks)
    refresher.request()
    await asyncio.sleep(0.3)
    assert len(runs) == 3
