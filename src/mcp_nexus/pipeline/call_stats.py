"""What the gateway counts for one tool or one server: calls, errors by class, latency, and what
the governance steps did to the calls (cache, limits, offload, retries, fallbacks, timeouts)."""

from __future__ import annotations

from typing import Any

from mcp_nexus.pipeline.latency_window import DEFAULT_WINDOW, LatencyWindow


class CallStats:
    __slots__ = (
        "cache_hits",
        "cache_misses",
        "calls",
        "errors_by_class",
        "fallbacks",
        "latency",
        "offload_bytes_kept_out",
        "offloads",
        "rate_limited",
        "retries",
        "timeouts",
    )

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        self.calls = 0
        self.errors_by_class: dict[str, int] = {}
        self.latency = LatencyWindow(window)
        self.cache_hits = 0  # "merged" calls (served by an identical call in flight) count as hits
        self.cache_misses = 0
        self.rate_limited = 0
        self.offloads = 0
        self.offload_bytes_kept_out = 0  # payload bytes that went to a file instead of the context
        self.retries = 0
        self.fallbacks = 0  # calls answered by (or failed on) a server after the first candidate
        self.timeouts = 0

    @property
    def errors(self) -> int:
        return sum(self.errors_by_class.values())

    @property
    def max_seconds(self) -> float:
        return max(self.latency.recent, default=0.0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "errors": self.errors,
            "errors_by_class": dict(self.errors_by_class),
            "latency": self.latency.summary(),
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
            "rate_limited": self.rate_limited,
            "offloads": self.offloads,
            "offload_bytes_kept_out": self.offload_bytes_kept_out,
            "retries": self.retries,
            "fallbacks": self.fallbacks,
            "timeouts": self.timeouts,
        }


class FrontendStats:
    """Calls per frontend, and the clients seen lately (a frontend's live sessions come from its status)."""

    __slots__ = ("calls", "clients_seen", "errors")

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.clients_seen: dict[str, float] = {}  # client name -> last call (wall clock seconds)

    def active_clients(self, now: float, within: float = 300.0) -> int:
        return sum(1 for seen in self.clients_seen.values() if now - seen <= within)
