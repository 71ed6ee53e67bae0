"""The Metrics page's time series: a sampler reads the cumulative counters every few seconds.

Nothing on the hot path: every `interval` seconds the sampler diffs the per-tool and
per-server call counts and latency sums against the previous sample and keeps the last
`points` of (calls per second, errors per second, average latency) per tool and server,
plus cache hits and misses, rate-limit refusals and offloads of the whole gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import Any

from mcp_nexus.pipeline.call_stats import CallStats
from mcp_nexus.pipeline.steps.metrics import MetricsStep

DEFAULT_INTERVAL = 5.0
DEFAULT_POINTS = 120  # ten minutes at 5 s


class MetricsHistory:
    def __init__(
        self, metrics: MetricsStep, *, interval: float = DEFAULT_INTERVAL, points: int = DEFAULT_POINTS
    ) -> None:
        self.metrics = metrics
        self.interval = interval
        self.points = points
        self.times: deque[float] = deque(maxlen=points)
        self.series: dict[str, dict[str, deque[list[float | None]]]] = {"tools": {}, "servers": {}}
        self.totals: deque[dict[str, float]] = deque(maxlen=points)
        self._last: dict[str, dict[str, tuple[int, float, int]]] = {"tools": {}, "servers": {}}
        self._last_totals: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.sample()
        self._task = asyncio.create_task(self._run(), name="dashboard-metrics-history")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.sample()

    def sample(self) -> None:
        now = time.time()
        points, rates, last, totals = self._measure(now)
        index = len(self.times) + 1
        self.times.append(now)
        for kind, rows in points.items():
            series = self.series[kind]
            for name, point in rows.items():
                row = series.get(name)
                if row is None:
                    row = series[name] = deque(maxlen=self.points)
                while len(row) < min(index, self.points) - 1:  # a new name: zeros before it existed
                    row.append([0.0, 0.0, None])
                row.append(point)
        self.totals.append(rates)
        self._last, self._last_totals = last, totals

    def _measure(
        self, now: float
    ) -> tuple[
        dict[str, dict[str, list[float | None]]],
        dict[str, float],
        dict[str, dict[str, tuple[int, float, int]]],
        dict[str, int],
    ]:
        """The point of every tool and server since the last sample (nothing is stored)."""
        elapsed = max(1e-3, (now - self.times[-1]) if self.times else self.interval)
        seen_before = bool(self.times)
        totals = dict.fromkeys(
            ("cache_hits", "cache_misses", "rate_limited", "offloads", "calls", "errors"), 0
        )
        points: dict[str, dict[str, list[float | None]]] = {"tools": {}, "servers": {}}
        last: dict[str, dict[str, tuple[int, float, int]]] = {"tools": {}, "servers": {}}
        for kind, table in (("tools", self.metrics.per_tool), ("servers", self.metrics.per_server)):
            for name, stats in list(table.items()):
                before = self._last[kind].get(name, (0, 0.0, 0) if seen_before else None)
                points[kind][name] = self._point(stats, before, elapsed)
                last[kind][name] = (stats.calls, stats.latency.total, stats.errors)
                if kind == "tools":
                    totals["cache_hits"] += stats.cache_hits
                    totals["cache_misses"] += stats.cache_misses
                    totals["rate_limited"] += stats.rate_limited
                    totals["offloads"] += stats.offloads
                    totals["calls"] += stats.calls
                    totals["errors"] += stats.errors
        rates = {
            key: max(0.0, (value - self._last_totals.get(key, value)) / elapsed)
            for key, value in totals.items()
        }
        return points, rates, last, totals

    @staticmethod
    def _point(stats: CallStats, before: tuple[int, float, int] | None, elapsed: float) -> list[float | None]:
        calls0, total0, errors0 = before or (stats.calls, stats.latency.total, stats.errors)
        calls = stats.calls - calls0
        avg_ms = (stats.latency.total - total0) / calls * 1000 if calls else None
        return [calls / elapsed, (stats.errors - errors0) / elapsed, avg_ms]

    def as_dict(self) -> dict[str, Any]:
        """The stored samples plus a provisional one for the time since the last (not stored)."""
        now = time.time()
        points, rates, _, _ = self._measure(now)
        times = [*self.times, now]
        out: dict[str, Any] = {"interval": self.interval, "times": times, "totals": [*self.totals, rates]}
        for kind in ("tools", "servers"):
            rows = {}
            for name, point in points[kind].items():
                stored = list(self.series[kind].get(name, ()))
                pad = [[0.0, 0.0, None]] * (len(times) - 1 - len(stored))
                rows[name] = [*pad, *stored, point]
            out[kind] = rows
        return out
