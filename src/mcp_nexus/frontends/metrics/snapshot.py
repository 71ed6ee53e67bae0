"""One JSON-ready picture of everything the gateway measures, read at request time.

The pipeline's MetricsStep holds the per-call figures; upstream state, restarts, health,
pids and memory, frontend sessions, the cache and the redact step's counts are read from their
owners here, at the moment of a scrape, so nothing on the hot path keeps them up to date. Used
by `/api/metrics`, the Prometheus collector (`/metrics`), the dashboard and `nexus stats`.
"""

from __future__ import annotations

import time
from typing import Any

from mcp_nexus import __version__
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.steps.redact import RedactStep
from mcp_nexus.upstream.process_usage import ProcessUsageReader

_STATE_ORDER = ("DISABLED", "STOPPED", "CONNECTING", "READY", "DEGRADED", "ERROR", "CRASHED")


class MetricsReader:
    """Reads a gateway's figures; keeps psutil handles between reads (one reader per app)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.processes = ProcessUsageReader()

    def upstreams(self) -> dict[str, dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        live: set[int] = set()
        for name, supervisor in list(self.gateway.supervisors.items()):
            upstream = supervisor.upstream
            pid = upstream.pid
            usage = self.processes.read(pid) if upstream.config.transport == "stdio" else None
            if pid is not None:
                live.add(pid)
            rows[name] = {
                "state": str(upstream.state),
                "transport": upstream.config.transport,
                "enabled": upstream.config.enabled,
                "priority": upstream.config.effective_priority,
                "tools": len(upstream.tools),
                "restarts": upstream.restarts,
                "restart_attempts": supervisor.budget.attempts,
                "health_failures": supervisor.health.failures,
                "health_checks": supervisor.health.checks,
                "uptime": upstream.uptime,
                "pid": pid,
                "rss_bytes": usage.rss_bytes if usage else None,
                "cpu_seconds": usage.cpu_seconds if usage else None,
                "last_error": upstream.last_error,
            }
        self.processes.forget_others(live)
        return rows

    def frontends(self) -> dict[str, dict[str, Any]]:
        """Per frontend: calls, errors, clients seen in the last 5 minutes, and live sessions/links."""
        snapshot = self.gateway.metrics.snapshot()["frontends"]
        rows: dict[str, dict[str, Any]] = {name: {**row, "connected": None} for name, row in snapshot.items()}
        for name, provider in list(self.gateway.status_providers.items()):
            try:
                status = provider()
            except Exception:  # a frontend's status must never break a scrape
                continue
            connected: int | None = None
            if isinstance(status, dict) and isinstance(status.get("sessions"), int):
                connected = status["sessions"]
            elif isinstance(status, list):  # Xiaozhi links: one row per endpoint/envelope link
                connected = sum(1 for row in status if isinstance(row, dict) and row.get("connected"))
            row = rows.setdefault(name, {"calls": 0, "errors": 0, "active_clients": 0, "connected": None})
            row["connected"] = connected
        return rows

    def redactions(self) -> dict[str, Any]:
        """What the redact step found: counts per server, tool, kind, where and mode, never values."""
        rows = [
            row
            for step in self.gateway.governance.tool_steps
            if isinstance(step, RedactStep)
            for row in step.rows()
        ]
        return {"total": sum(row["count"] for row in rows), "rows": rows}

    def snapshot(self) -> dict[str, Any]:
        gateway = self.gateway
        calls = gateway.metrics.snapshot()
        own = self.processes.own()
        cache = gateway.governance.cache.store.stats()
        upstreams = self.upstreams()
        return {
            "version": __version__,
            "timestamp": time.time(),
            "metrics_enabled": gateway.config.gateway.metrics,
            "window": calls["window"],
            "gateway": {
                "uptime": time.time() - gateway.started_at,
                "in_flight": gateway.in_flight,
                "tools": len(gateway.catalog.tool_list),
                "servers": len(upstreams),
                "servers_running": sum(1 for u in upstreams.values() if u["state"] in ("READY", "DEGRADED")),
                "processes": sum(1 for u in upstreams.values() if u["pid"] is not None),
                "embedded_tools": sum(u["tools"] for u in upstreams.values() if u["transport"] == "embedded"),
                "rss_bytes": own.rss_bytes if own else None,
                "cpu_seconds": own.cpu_seconds if own else None,
                "cache_entries": cache.entries,
                "cache_bytes": cache.bytes,
                "cache_evictions": cache.evictions,
            },
            "tools": calls["tools"],
            "servers": calls["servers"],
            "methods": calls["methods"],
            "frontends": self.frontends(),
            "upstreams": upstreams,
            "redactions": self.redactions(),
        }


def state_values() -> tuple[str, ...]:
    """Every upstream state, for one-hot state gauges (a state absent now still reads 0)."""
    return _STATE_ORDER
