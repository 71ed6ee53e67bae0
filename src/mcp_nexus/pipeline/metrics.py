"""Counts and times every call per tool: the first step of the chain."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome


@dataclass
class ToolStats:
    calls: int = 0
    errors: int = 0
    total_seconds: float = 0.0
    max_seconds: float = 0.0
    recent: list[float] = field(default_factory=list)  # a ring of the last latencies, for percentiles

    def record(self, seconds: float, failed: bool) -> None:
        self.calls += 1
        self.errors += failed
        self.total_seconds += seconds
        self.max_seconds = max(self.max_seconds, seconds)
        if len(self.recent) >= 256:
            self.recent[self.calls % 256] = seconds
        else:
            self.recent.append(seconds)


class MetricsStep:
    def __init__(self) -> None:
        self.per_tool: dict[str, ToolStats] = {}

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        started = time.perf_counter()
        failed = True
        try:
            result = await call_next(call)
            failed = bool(getattr(result, "is_error", False))
            return result
        finally:
            stats = self.per_tool.get(call.name)
            if stats is None:
                stats = self.per_tool[call.name] = ToolStats()
            stats.record(time.perf_counter() - started, failed)
