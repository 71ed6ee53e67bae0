"""A server's log records in the gateway's log: bounded per server, one line each, its secrets masked.

What a real flooding process costs the log is in tests/robustness/test_notification_flood_budget.py.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from mcp_nexus.config.schema import ServerConfig, UpstreamLimits
from mcp_nexus.upstream import log_records
from mcp_nexus.upstream.log_records import ServerLogRecords

SECRET = "sk-live-0123456789abcdef"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def server(**limits: object) -> ServerConfig:
    return ServerConfig(
        name="chatty",
        transport="stdio",
        command="python",
        env={"API_KEY": SECRET},
        limits=UpstreamLimits(**limits),  # type: ignore[arg-type]
    )


def lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "mcp_nexus.upstream.log" and r.levelno == level
    ]


def clocked(caplog: pytest.LogCaptureFixture, **limits: object) -> tuple[ServerLogRecords, Clock]:
    """A server's log records under `limits`, on a clock the test moves; INFO and up captured."""
    caplog.set_level(logging.INFO, logger="mcp_nexus")
    clock = Clock()
    config = server(**limits)
    return ServerLogRecords("chatty", lambda: config, clock), clock


def test_a_burst_is_logged_then_the_rate_and_the_rest_are_counted_in_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    records, clock = clocked(caplog, stderr_burst=5, stderr_lines_per_second=2)
    for n in range(50):
        records.log("info", f"record {n}")
    assert lines(caplog) == [f"[chatty] log info: record {n}" for n in range(5)]
    assert (records.seen, records.logged, records.suppressed) == (50, 5, 45)
    assert lines(caplog, logging.WARNING) == []  # said once the flood ends or after a while
    clock.now += 1.0  # two more may pass, but the bucket is not full again: the flood may go on
    records.log("info", "after a second")
    assert lines(caplog, logging.WARNING) == [] and records.logged == 6
    clock.now += 3.0  # quiet long enough to fill the bucket: the flood is over, and said so
    records.log("info", "after a quiet while")
    warnings = lines(caplog, logging.WARNING)
    assert warnings == [
        "[chatty] 45 log record(s) not logged in the last 4 s (over 2 a second; limits.stderr_*)"
    ]
    assert lines(caplog)[-1] == "[chatty] log info: after a quiet while"


def test_a_steady_flood_past_the_rate_is_one_warning_per_interval_not_one_per_record_passed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The rate lets a record through now and then, as a real flood does (1,000 a second against
    # 10 a second here); each of those said the count so far: 10 warnings a second.
    records, clock = clocked(caplog, stderr_burst=100, stderr_lines_per_second=10)
    for _ in range(25_000):  # 25 s of 1,000 records a second
        records.log("info", "x")
        clock.now += 0.001
    warnings = lines(caplog, logging.WARNING)
    assert 2 <= len(warnings) <= 3, warnings[:5]  # at 10 s and 20 s (and maybe at the end)
    assert 100 + 10 * 25 - 2 <= records.logged <= 100 + 10 * 25 + 2
    assert sum(int(w.split()[1]) for w in warnings) <= records.suppressed


def test_a_long_flood_is_said_every_interval_not_per_record(caplog: pytest.LogCaptureFixture) -> None:
    records, clock = clocked(caplog, stderr_burst=1, stderr_lines_per_second=0.001)
    for _ in range(30):  # 30 s of 1,000 records a second
        for _ in range(1000):
            records.log("debug", "x")
        clock.now += 1.0
    warnings = lines(caplog, logging.WARNING)
    assert 2 <= len(warnings) <= 3, warnings
    assert sum(int(w.split()[1]) for w in warnings) <= records.suppressed
    assert len(lines(caplog)) == 1


async def test_a_flood_that_stops_is_still_said(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_nexus")
    monkeypatch.setattr(log_records, "SUPPRESSED_REPORT_S", 0.05)
    config = server(stderr_burst=1, stderr_lines_per_second=0.001)
    records = ServerLogRecords("chatty", lambda: config)
    for _ in range(10):
        records.log("info", "x")
    await asyncio.sleep(0.2)  # no record comes after the flood
    assert [w.split(" not logged")[0] for w in lines(caplog, logging.WARNING)] == ["[chatty] 9 log record(s)"]


def test_a_record_is_one_line_cut_to_the_limit_with_the_servers_secret_masked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_nexus")
    config = server(stderr_line_chars=80)
    records = ServerLogRecords("chatty", lambda: config)
    records.log("info", "line one\nFORGED 2026-01-01 CRITICAL gateway compromised\r")
    records.log("error", {"token": SECRET, "n": 1})
    # The secret straddles the cut at 80 characters: masked before the cut, no half of it shows.
    records.log("info", "x" * 70 + SECRET + "y" * 5000)
    forged, data, long = lines(caplog)
    assert forged == "[chatty] log info: line one\\nFORGED 2026-01-01 CRITICAL gateway compromised\\r"
    assert SECRET not in data and '"n": 1' in data and data.startswith("[chatty] log error: {")
    assert SECRET[:12] not in long and "0123" not in long
    shown = long.removeprefix("[chatty] log info: ")
    assert shown.startswith("x" * 70) and shown.endswith("characters]") and len(shown) < 120, shown


def test_a_reload_changes_the_limits_in_force(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_nexus")
    clock = Clock()
    current = [server(stderr_burst=2, stderr_lines_per_second=0.001)]
    records = ServerLogRecords("chatty", lambda: current[0], clock)
    for _ in range(5):
        records.log("info", "before")
    current[0] = server(stderr_burst=4, stderr_lines_per_second=0.001)
    for _ in range(5):
        records.log("info", "after")
    assert [line.rsplit(" ", 1)[1] for line in lines(caplog)] == ["before"] * 2 + ["after"] * 4


def test_a_lone_surrogate_is_escaped_so_a_utf8_log_file_takes_the_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_nexus")
    handler = logging.FileHandler(tmp_path / "gateway.log", encoding="utf-8")  # errors: strict
    failures: list[logging.LogRecord] = []
    handler.handleError = failures.append  # type: ignore[method-assign]
    records_logger = logging.getLogger("mcp_nexus.upstream.log")
    records_logger.addHandler(handler)
    try:
        config = server()
        records = ServerLogRecords("chatty", lambda: config)
        records.log("info", "before \ud800 after")
        records.log("info", {"text": "\udfff", "ok": "é"})
    finally:
        records_logger.removeHandler(handler)
        handler.close()
    assert failures == []
    written = (tmp_path / "gateway.log").read_text(encoding="utf-8")
    assert "before \\ud800 after" in written and "\\udfff" in written and "é" in written, written
