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
from mcp_nexus.pipeline.metrics import MetricsStep

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
        elapsed = (now - self.times[-1]) if self.times else self.interval
        self.times.append(now)
        index = len(self.times)
        totals = {
            "cache_hits": 0,
            "cache_misses": 0,
            "rate_limited": 0,
            "offloads": 0,
            "calls": 0,
            "errors": 0,
        }
        for kind, table in (("tools", self.metrics.per_tool), ("servers", self.metrics.per_server)):
            last = self._last[kind]
            series = self.series[kind]
            for name, stats in list(table.items()):
                point = self._point(stats, last.get(name, (0, 0.0, 0) if index > 1 else None), elapsed)
                last[name] = (stats.calls, stats.latency.total, stats.errors)
                row = series.get(name)
                if row is None:
                    row = series[name] = deque(maxlen=self.points)
                while len(row) < index - 1:  # a new name: zeros for the samples before it existed
                    row.append([0.0, 0.0, None])
                row.append(point)
                if kind == "tools":
                    for key in ("cache_hits", "cache_misses", "rate_limited", "offloads", "calls", "errors"):
                        totals[key] += stats.errors if key == "errors" else getattr(stats, key)
        rates = {
            key: max(0.0, (value - self._last_totals.get(key, value)) / elapsed)
            for key, value in totals.items()
        }
        self._last_totals = totals
        self.totals.append(rates)

    @staticmethod
    def _point(stats: CallStats, before: tuple[int, float, int] | None, elapsed: float) -> list[float | None]:
        calls0, total0, errors0 = before or (stats.calls, stats.latency.total, stats.errors)
        calls = stats.calls - calls0
        avg_ms = (stats.latency.total - total0) / calls * 1000 if calls else None
        return [calls / elapsed, (stats.errors - errors0) / elapsed, avg_ms]

    def as_dict(self) -> dict[str, Any]:
        return {
            "interval": self.interval,
            "times": list(self.times),
            "tools": {name: list(row) for name, row in self.series["tools"].items()},
            "servers": {name: list(row) for name, row in self.series["servers"].items()},
            "totals": list(self.totals),
        }
