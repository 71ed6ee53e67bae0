"""What the metrics step records, read off real calls through a real gateway with real stdio servers."""

from __future__ import annotations

import mcp_types as types
import pytest

from lifecycle.faults import document, faulty
from mcp_nexus.errors import ToolTimeoutError
from mcp_nexus.frontends.dashboard.history import MetricsHistory
from mcp_nexus.pipeline.latency_window import LatencyWindow
from mcp_nexus.pipeline.steps.metrics import UNKNOWN_TOOL
from support.gateway import load, running_gateway


def test_latency_window_summary_is_over_the_last_n_calls() -> None:
    window = LatencyWindow(100)
    for value in range(1, 201):  # 1..200: the window keeps 101..200
        window.record(float(value))
    summary = window.summary()
    assert (summary["count"], summary["window"]) == (200, 100)
    assert summary["sum"] == sum(range(1, 201))
    assert (summary["min"], summary["max"], summary["avg"]) == (101.0, 200.0, 150.5)
    assert (summary["p50"], summary["p95"], summary["p99"]) == (150.0, 195.0, 199.0)
    window.resize(10)
    assert window.summary()["min"] == 191.0
    assert LatencyWindow(5).summary()["p99"] is None


def servers() -> dict[str, object]:
    # Same bare names on both: "primary" first by priority, "backup" takes over when it cannot answer.
    tools = {
        "slow": {"timeout": 0.3},
        "pid": {"rate_limit": "1/minute"},
        "noise": {"cache_ttl": 60},
        "hang": {"timeout": 0.2, "retries": 1, "idempotent": True},
    }
    return {
        "primary": faulty("primary", namespace="", priority=60, tool_config=tools),
        "backup": faulty("backup", namespace="", priority=20, tool_config={"hang": {"timeout": 0.2}}),
    }


async def test_calls_errors_cache_limits_offloads_retries_fallbacks_and_timeouts() -> None:
    doc = document(servers(), offload_threshold=2000, retry_backoff=0.05, metrics_window=2)
    async with running_gateway(doc) as gw:
        for text in ("a", "b", "c"):
            await gw.call_tool("echo", {"text": text})
        await gw.call_tool("echo", {"text": "x" * 3000})  # offloaded
        await gw.call_tool("fail", {})
        await gw.call_tool("slow", {"seconds": 1})  # primary times out, backup answers
        for _ in range(2):
            await gw.call_tool("pid", {})  # the second is over the limit
            await gw.call_tool("noise", {"lines": 1})  # the second is a cache hit
        for name in ("nope1", "nope2"):
            with pytest.raises(Exception):  # noqa: B017 - the class is checked through the metrics
                await gw.call_tool(name, {})
        with pytest.raises(ToolTimeoutError):
            await gw.call_tool("hang", {})

        tools = gw.metrics.per_tool
        echo = tools["echo"]
        assert (echo.calls, echo.errors, echo.offloads) == (4, 0, 1)
        assert echo.offload_bytes_kept_out > 2000
        assert (echo.latency.count, len(echo.latency.recent)) == (4, 2)  # metrics_window: 2
        assert tools["fail"].errors_by_class == {"tool_error": 1}
        assert tools["slow"].fallbacks == 1 and tools["slow"].errors == 0
        assert tools["pid"].rate_limited == 1 and tools["pid"].errors_by_class == {"rate_limited": 1}
        assert (tools["noise"].cache_hits, tools["noise"].cache_misses) == (1, 1)
        assert tools[UNKNOWN_TOOL].errors_by_class == {"unknown_tool": 2}
        assert "nope1" not in tools and "nope2" not in tools  # invented names never grow the tables
        hang = tools["hang"]
        assert (hang.timeouts, hang.retries, hang.fallbacks) == (1, 1, 1)

        per_server = gw.metrics.per_server
        # Calls that reached no server (refused by the limit, served by the cache, unknown names)
        # count for no server; a call that went to both counts for the one that ended it.
        assert per_server["primary"].calls == 7  # echo 4, fail, the first pid, the first noise
        assert per_server["backup"].calls == 2  # the slow call it answered, the hang it timed out on
        assert per_server["backup"].timeouts == 1
        assert gw.metrics.per_frontend["api"].calls == 13

        recent = gw.metrics.recent.snapshot()
        assert len(recent) == 13 and recent[-1]["tool"] == "hang" and recent[-1]["outcome"] == "timeout"
        assert any(r["offloaded"] for r in recent)
        # The log keeps who/what/how long, never arguments or results (they may hold secrets).
        assert "xxxx" not in repr(recent) and "primary: a" not in repr(recent)


async def test_metrics_off_leaves_the_step_out_of_the_pipeline() -> None:
    async with running_gateway(document(servers(), metrics=False)) as gw:
        result = await gw.call_tool("echo", {"text": "a"})
        assert isinstance(result, types.CallToolResult)
        assert gw.metrics.per_tool == {} and not gw.metrics.recent.ring


async def test_history_turns_counters_into_rates_between_samples() -> None:
    async with running_gateway(document(servers())) as gw:
        history = MetricsHistory(gw.metrics, interval=1.0, points=3)
        history.sample()
        for _ in range(4):
            await gw.call_tool("echo", {"text": "a"})
        history.sample()
        shown = history.as_dict()
        assert len(shown["times"]) == 3  # two samples and the provisional one
        rate, errors, avg_ms = shown["tools"]["echo"][1]
        assert rate > 0 and errors == 0 and avg_ms is not None and avg_ms > 0
        assert shown["tools"]["echo"][0] == [0.0, 0.0, None]  # before the tool had calls
        for _ in range(3):
            history.sample()
        assert len(history.as_dict()["times"]) == 4  # at most `points` stored, plus the provisional


async def test_a_reload_resizes_the_window_and_metrics_on_off_waits_for_a_restart() -> None:
    async with running_gateway(document(servers())) as gw:
        for _ in range(5):
            await gw.call_tool("echo", {"text": "a"})
        report = await gw.reload(load(document(servers(), metrics_window=3, metrics=False)))
        echo = gw.metrics.per_tool["echo"]
        assert echo.latency.recent.maxlen == 3 and len(echo.latency.recent) == 3
        assert echo.latency.count == 5  # lifetime figures are kept
        assert "metrics" in report.needs_process_restart
        await gw.call_tool("echo", {"text": "a"})
        assert echo.calls == 6  # still recording until `nexus serve` restarts
