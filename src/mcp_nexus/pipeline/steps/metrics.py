"""Counts and times every call per tool, server, frontend and method: the first step of the chain.

Everything here is read from what the call carries when it comes back (its typed fields,
`ToolCall.cache/retries/servers_tried/server`, and the markers steps put in the result's
`_meta`), so no other step has to report to this one. Recording is a handful of dict
look-ups and integer additions; summaries (percentiles) are computed only when read:
see docs/PERFORMANCE.md, "Cost of metrics".
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import mcp_types as types

from mcp_nexus.errors import (
    GatewayError,
    InvalidArgumentsError,
    NotFoundError,
    PermissionDeniedError,
    ToolTimeoutError,
    UnavailableError,
    UnknownToolError,
)
from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.call_stats import CallStats, FrontendStats
from mcp_nexus.pipeline.latency_window import DEFAULT_WINDOW
from mcp_nexus.pipeline.recent_calls import RecentCalls
from mcp_nexus.pipeline.steps.offload import OFFLOAD_META_KEY
from mcp_nexus.pipeline.steps.ratelimit import RATE_LIMIT_META_KEY

# Most specific first: UnknownToolError is an InvalidArgumentsError's sibling, both -32602.
_ERROR_CLASSES: tuple[tuple[type[BaseException], str], ...] = (
    (ToolTimeoutError, "timeout"),
    (TimeoutError, "timeout"),
    (UnknownToolError, "unknown_tool"),
    (InvalidArgumentsError, "invalid_arguments"),
    (UnavailableError, "unavailable"),
    (NotFoundError, "not_found"),
    (PermissionDeniedError, "permission_denied"),
    (asyncio.CancelledError, "cancelled"),
)


UNKNOWN_TOOL = "(unknown)"


def error_class(exc: BaseException) -> str:
    """A short, bounded name for what a failed call ended with (a metric label: never free text)."""
    for cls, name in _ERROR_CLASSES:
        if isinstance(exc, cls):
            return name
    return "gateway_error" if isinstance(exc, GatewayError) else "internal"


class MetricsStep:
    def __init__(self, window: int = DEFAULT_WINDOW, recent: RecentCalls | None = None) -> None:
        self.window = window
        self.per_tool: dict[str, CallStats] = {}
        self.per_server: dict[str, CallStats] = {}
        self.per_method: dict[str, CallStats] = {}  # resources/read, prompts/get, completion/complete
        self.per_frontend: dict[str, FrontendStats] = {}
        self.recent = recent or RecentCalls()
        self.started = time.time()

    def resize(self, window: int) -> None:
        """A reload changed `gateway.metrics_window`: keep what is recorded, bound it anew."""
        self.window = window
        for table in (self.per_tool, self.per_server, self.per_method):
            for stats in table.values():
                stats.latency.resize(window)

    def _stats(self, table: dict[str, CallStats], key: str) -> CallStats:
        stats = table.get(key)
        if stats is None:
            stats = table[key] = CallStats(self.window)
        return stats

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        started = time.perf_counter()
        outcome: Any = None
        failure: BaseException | None = None
        try:
            outcome = await call_next(call)
            return outcome  # type: ignore[no-any-return]
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.record(call, time.perf_counter() - started, outcome, failure)

    def record(self, call: ToolCall, seconds: float, outcome: Any, failure: BaseException | None) -> None:
        if failure is not None:
            klass: str | None = error_class(failure)
        elif getattr(outcome, "is_error", False):
            meta = outcome.meta
            klass = "rate_limited" if meta and RATE_LIMIT_META_KEY in meta else "tool_error"
        else:
            klass = None
        tools_call = call.method == "tools/call"
        if not tools_call:
            stats = self._stats(self.per_method, call.method)
        elif klass == "unknown_tool":
            # Names nobody offers share one row: a caller must not grow the tables (and the
            # metric label sets) without bound by inventing names.
            stats = self._stats(self.per_tool, UNKNOWN_TOOL)
        else:
            stats = self._stats(self.per_tool, call.name)
        tried = call.servers_tried
        server = call.server or (tried[-1] if tried else None)
        server_stats = self._stats(self.per_server, server) if server is not None else None
        offloaded = False
        offload_file = None
        kept_out = 0
        if tools_call and isinstance(outcome, types.CallToolResult) and outcome.meta:
            info = outcome.meta.get(OFFLOAD_META_KEY)
            if isinstance(info, dict):
                offload_file = info.get("file")  # the dashboard's call log opens it (its owner only)
                if call.cache not in ("hit", "merged"):
                    offloaded = True
                    kept_out = max(0, int(info.get("bytes", 0)) - _answer_bytes(call, outcome))
        for target in (stats, server_stats):
            if target is None:
                continue
            target.calls += 1
            target.latency.record(seconds)
            if klass is not None:
                target.errors_by_class[klass] = target.errors_by_class.get(klass, 0) + 1
                if klass == "timeout":
                    target.timeouts += 1
                elif klass == "rate_limited":
                    target.rate_limited += 1
            if call.cache is not None:
                if call.cache == "miss":
                    target.cache_misses += 1
                else:
                    target.cache_hits += 1
            if call.retries:
                target.retries += call.retries
            if len(tried) > 1:
                target.fallbacks += 1
            if offloaded:
                target.offloads += 1
                target.offload_bytes_kept_out += kept_out
        caller = call.caller
        # Calls made by code in python_sandbox get a row of their own ("stdio/sandbox"): the
        # frontend rows then count what clients asked directly, and the two add up to all calls.
        way_in = caller.frontend if caller.via is None else f"{caller.frontend}/{caller.via}"
        frontend = self.per_frontend.get(way_in)
        if frontend is None:
            frontend = self.per_frontend[way_in] = FrontendStats()
        frontend.calls += 1
        if klass is not None:
            frontend.errors += 1
        now = time.time()
        frontend.clients_seen[caller.client or "-"] = now
        recent = self.recent
        recent.seq += 1
        recent.add(
            (
                recent.seq,
                now,
                call.method,
                call.name,
                server,
                caller.frontend,
                caller.client,
                seconds,
                klass or ("input_required" if isinstance(outcome, types.InputRequiredResult) else "ok"),
                call.cache,
                offloaded,
                call.retries,
                len(tried),
                offload_file,
                caller.via,
            )
        )

    def snapshot(self) -> dict[str, Any]:
        """Everything recorded, as JSON-ready dicts (summaries computed now)."""
        now = time.time()
        return {
            "window": self.window,
            "tools": {name: s.as_dict() for name, s in self.per_tool.items()},
            "servers": {name: s.as_dict() for name, s in self.per_server.items()},
            "methods": {name: s.as_dict() for name, s in self.per_method.items()},
            "frontends": {
                name: {"calls": f.calls, "errors": f.errors, "active_clients": f.active_clients(now)}
                for name, f in self.per_frontend.items()
            },
        }


def _answer_bytes(call: ToolCall, answer: types.CallToolResult) -> int:
    measured = call.measured
    if measured is not None and measured[0] is answer:
        return measured[1]
    return sum(len(c.text.encode()) for c in answer.content if isinstance(c, types.TextContent))
