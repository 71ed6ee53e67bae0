"""`/metrics`: the gateway's figures as Prometheus metric families, built at scrape time.

A custom prometheus-client Collector reads `MetricsReader.snapshot()` when scraped, so the
hot path never touches prometheus-client objects; the exposition itself is the library's.
Label values are tool, server, frontend and method names, error classes and states: never
arguments, tokens or URLs. The names are listed in docs/OPERATIONS.md ("Metrics").
Every label value goes through `_label`: prometheus-client escapes only backslash, quote and
newline, and a tool name a client called (or an old server listed) may hold ESC or U+202E.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample

from mcp_nexus.catalog.tool_names import printable
from mcp_nexus.frontends.metrics.snapshot import MetricsReader, state_values

LABEL_CHARS = 200
"""Longest label value shown: more than any valid exposed name; longer ones are cut (and say so)."""


def _label(value: object) -> str:
    """A label value that cannot drive a terminal or a log viewer: unsafe characters escaped, cut long."""
    return printable(str(value), LABEL_CHARS)


_QUANTILES = (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99"))
_COUNTERS = (
    ("cache_hits", "calls answered from the cache (or merged into an identical call in flight)"),
    ("cache_misses", "cacheable calls that went to a server"),
    ("rate_limited", "calls refused by a rate limit"),
    ("offloads", "results saved to a file instead of being returned"),
    ("offload_bytes_kept_out", "bytes of offloaded results kept out of the caller's context"),
    ("retries", "retries of idempotent calls after a timeout or transport failure"),
    ("fallbacks", "calls that went past the first candidate server"),
    ("timeouts", "calls that ended in a timeout"),
)


def _call_families(prefix: str, label: str, what: str, rows: dict[str, dict[str, Any]]) -> Iterator[Metric]:
    """Counters, errors by class and the latency summary for one table (tools, servers or methods)."""
    calls = CounterMetricFamily(f"{prefix}_calls", f"calls per {what}", labels=[label])
    errors = CounterMetricFamily(
        f"{prefix}_errors", f"failed calls per {what} and error class", labels=[label, "class"]
    )
    latency = SummaryMetricFamily(
        f"{prefix}_latency_seconds",
        f"call latency per {what}: quantiles over the last gateway.metrics_window calls; count and sum over all",
        labels=[label],
    )
    window = GaugeMetricFamily(
        f"{prefix}_latency_window_seconds",
        f"min, avg and max latency per {what} over the last gateway.metrics_window calls",
        labels=[label, "stat"],
    )
    counters = {
        key: CounterMetricFamily(f"{prefix}_{key}", f"{doc}, per {what}", labels=[label])
        for key, doc in _COUNTERS
    }
    for raw_name, row in rows.items():
        name = _label(raw_name)
        calls.add_metric([name], row["calls"])
        for klass, count in row["errors_by_class"].items():
            errors.add_metric([name, _label(klass)], count)
        summary = row["latency"]
        latency.add_metric([name], count_value=summary["count"], sum_value=summary["sum"])
        for quantile, key in _QUANTILES:
            if summary[key] is not None:
                latency.samples.append(
                    Sample(latency.name, {label: name, "quantile": quantile}, summary[key])
                )
        for stat in ("min", "avg", "max"):
            if summary[stat] is not None:
                window.add_metric([name, stat], summary[stat])
        for key, family in counters.items():
            family.add_metric([name], row[key])
    yield from (calls, errors, latency, window)
    if prefix != "nexus_request":
        yield from counters.values()


def _gauge(name: str, doc: str, value: float | None) -> Iterable[Metric]:
    if value is None:
        return ()
    family = GaugeMetricFamily(name, doc)
    family.add_metric([], value)
    return (family,)


class GatewayCollector(Collector):
    def __init__(self, reader: MetricsReader) -> None:
        self.reader = reader

    def collect(self) -> Iterator[Metric]:
        snap = self.reader.snapshot()
        info = GaugeMetricFamily("nexus_info", "the gateway's version", labels=["version"])
        info.add_metric([_label(snap["version"])], 1)
        yield info
        gw = snap["gateway"]
        yield from _gauge("nexus_gateway_uptime_seconds", "seconds since the gateway started", gw["uptime"])
        yield from _gauge("nexus_gateway_in_flight", "calls in flight", gw["in_flight"])
        yield from _gauge("nexus_gateway_tools", "tools exposed", gw["tools"])
        yield from _gauge("nexus_gateway_servers", "servers configured", gw["servers"])
        yield from _gauge("nexus_gateway_servers_running", "servers READY or DEGRADED", gw["servers_running"])
        yield from _gauge("nexus_gateway_processes", "upstream child processes alive", gw["processes"])
        yield from _gauge(
            "nexus_gateway_embedded_tools", "tools of servers inside the gateway", gw["embedded_tools"]
        )
        yield from _gauge(
            "nexus_gateway_rss_bytes", "resident memory of the gateway process", gw["rss_bytes"]
        )
        yield from _gauge("nexus_cache_entries", "results held by the cache", gw["cache_entries"])
        yield from _gauge("nexus_cache_bytes", "bytes held by the cache", gw["cache_bytes"])
        if gw["cpu_seconds"] is not None:
            cpu = CounterMetricFamily("nexus_gateway_cpu_seconds", "CPU time of the gateway process")
            cpu.add_metric([], gw["cpu_seconds"])
            yield cpu
        evictions = CounterMetricFamily("nexus_cache_evictions", "results evicted from the cache for room")
        evictions.add_metric([], gw["cache_evictions"])
        yield evictions

        yield from _call_families("nexus_tool", "tool", "tool", snap["tools"])
        yield from _call_families("nexus_server", "server", "server", snap["servers"])
        yield from _call_families("nexus_request", "method", "request method", snap["methods"])

        f_calls = CounterMetricFamily("nexus_frontend_calls", "calls per frontend", labels=["frontend"])
        f_errors = CounterMetricFamily(
            "nexus_frontend_errors", "failed calls per frontend", labels=["frontend"]
        )
        f_active = GaugeMetricFamily(
            "nexus_frontend_active_clients", "clients that called in the last 5 minutes", labels=["frontend"]
        )
        f_connected = GaugeMetricFamily(
            "nexus_frontend_connected_clients",
            "sessions or links open now (HTTP sessions, Xiaozhi links)",
            labels=["frontend"],
        )
        for raw_name, row in snap["frontends"].items():
            name = _label(raw_name)
            f_calls.add_metric([name], row["calls"])
            f_errors.add_metric([name], row["errors"])
            f_active.add_metric([name], row["active_clients"])
            if row["connected"] is not None:
                f_connected.add_metric([name], row["connected"])
        yield from (f_calls, f_errors, f_active, f_connected)

        labels = ["server"]
        state = GaugeMetricFamily(
            "nexus_upstream_state", "1 for the server's current state", labels=["server", "state"]
        )
        up = GaugeMetricFamily("nexus_upstream_up", "1 when the server is READY or DEGRADED", labels=labels)
        restarts = CounterMetricFamily(
            "nexus_upstream_restarts",
            "restarts after a crash or failed health checks (not operator stops/starts or reloads)",
            labels=labels,
        )
        health = GaugeMetricFamily(
            "nexus_upstream_health_failures", "failed health checks in a row", labels=labels
        )
        checks = CounterMetricFamily("nexus_upstream_health_checks", "health checks made", labels=labels)
        uptime = GaugeMetricFamily(
            "nexus_upstream_uptime_seconds", "seconds READY in the current session", labels=labels
        )
        pid = GaugeMetricFamily("nexus_upstream_pid", "process id of a stdio server", labels=labels)
        rss = GaugeMetricFamily(
            "nexus_upstream_rss_bytes", "resident memory of a stdio server", labels=labels
        )
        cpu = CounterMetricFamily(
            "nexus_upstream_cpu_seconds", "CPU time of a stdio server process", labels=labels
        )
        tools = GaugeMetricFamily("nexus_upstream_tools", "tools the server lists", labels=labels)
        for raw_name, row in snap["upstreams"].items():
            name = _label(raw_name)
            for value in state_values():
                state.add_metric([name, value], 1 if row["state"] == value else 0)
            up.add_metric([name], 1 if row["state"] in ("READY", "DEGRADED") else 0)
            restarts.add_metric([name], row["restarts"])
            health.add_metric([name], row["health_failures"])
            checks.add_metric([name], row["health_checks"])
            uptime.add_metric([name], row["uptime"] or 0)
            tools.add_metric([name], row["tools"])
            if row["pid"] is not None:
                pid.add_metric([name], row["pid"])
            if row["rss_bytes"] is not None:
                rss.add_metric([name], row["rss_bytes"])
            if row["cpu_seconds"] is not None:
                cpu.add_metric([name], row["cpu_seconds"])
        yield from (state, up, restarts, health, checks, uptime, pid, rss, cpu, tools)


def gateway_registry(reader: MetricsReader) -> CollectorRegistry:
    """A registry of its own (not the process-global one): one gateway, one set of families."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GatewayCollector(reader))
    return registry
