"""Latency over the last N calls (the document's "last 100"), plus lifetime count and sum.

Recording is an append to a bounded deque and four arithmetic updates: nothing sorts or
allocates on the hot path. Percentiles are computed when someone reads them (a scrape,
the dashboard, `nexus stats`), from a sorted copy of at most N floats.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

DEFAULT_WINDOW = 100


class LatencyWindow:
    __slots__ = ("count", "recent", "total")

    def __init__(self, size: int = DEFAULT_WINDOW) -> None:
        self.count = 0  # lifetime: Prometheus summaries need monotonic _count and _sum
        self.total = 0.0
        self.recent: deque[float] = deque(maxlen=size)

    def record(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.recent.append(seconds)

    def resize(self, size: int) -> None:
        if size != self.recent.maxlen:
            self.recent = deque(self.recent, maxlen=size)

    def summary(self) -> dict[str, Any]:
        """count/avg/min/max/p50/p95/p99 over the window (seconds), and the lifetime count and sum."""
        window = sorted(self.recent)
        n = len(window)
        out: dict[str, Any] = {"count": self.count, "sum": self.total, "window": n}
        if not n:
            out.update(avg=None, min=None, max=None, p50=None, p95=None, p99=None)
            return out
        out.update(
            avg=sum(window) / n,
            min=window[0],
            max=window[-1],
            p50=percentile(window, 0.50),
            p95=percentile(window, 0.95),
            p99=percentile(window, 0.99),
        )
        return out


def percentile(ordered: list[float], q: float) -> float:
    """The nearest-rank percentile of an ordered, non-empty list."""
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]
