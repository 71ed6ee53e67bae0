"""`nexus stats`: the running gateway's `/api/metrics` as rich tables (per tool, per server, gateway)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _mib(size: int | None) -> str:
    return "-" if size is None else f"{size / 1048576:.1f}"


def _calls_table(title: str, label: str, rows: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in (label, "calls", "errors", "avg ms", "min", "max", "p50", "p95", "p99"):
        table.add_column(column, justify="left" if column == label else "right")
    for column in ("cache hit/miss", "limited", "offloads", "retries", "fallbacks", "timeouts"):
        table.add_column(column, justify="right")
    for name, row in sorted(rows.items()):
        lat = row["latency"]
        errors = ", ".join(f"{k} {v}" for k, v in sorted(row["errors_by_class"].items())) or "0"
        table.add_row(
            Text(name),
            str(row["calls"]),
            Text(errors, style="red" if row["errors"] else ""),
            _ms(lat["avg"]),
            _ms(lat["min"]),
            _ms(lat["max"]),
            _ms(lat["p50"]),
            _ms(lat["p95"]),
            _ms(lat["p99"]),
            f"{row['cache_hits']}/{row['cache_misses']}",
            str(row["rate_limited"]),
            f"{row['offloads']} ({row['offload_bytes_kept_out']} B)" if row["offloads"] else "0",
            str(row["retries"]),
            str(row["fallbacks"]),
            str(row["timeouts"]),
        )
    return table


def render_stats(snapshot: dict[str, Any]) -> Group:
    """Tables for one `/api/metrics` answer: gateway, upstreams, frontends, tools, servers."""
    gw = snapshot["gateway"]
    head = Text(
        f"Nexus {snapshot['version']}: up {gw['uptime']:.0f} s, {gw['servers_running']}/{gw['servers']} servers "
        f"running, {gw['processes']} processes, {gw['tools']} tools ({gw['embedded_tools']} embedded), "
        f"{gw['in_flight']} in flight, memory {_mib(gw['rss_bytes'])} MiB, cache {gw['cache_entries']} entries "
        f"({gw['cache_bytes']} B). Latency over the last {snapshot['window']} calls, in ms."
    )
    upstreams = Table(title="upstreams", title_justify="left")
    for column in (
        "server",
        "state",
        "transport",
        "tools",
        "restarts",
        "health fails",
        "uptime s",
        "pid",
        "RSS MiB",
    ):
        upstreams.add_column(column)
    for name, row in sorted(snapshot["upstreams"].items()):
        state = row["state"]
        upstreams.add_row(
            Text(name),
            Text(state, style="green" if state == "READY" else "yellow" if state == "CONNECTING" else "red"),
            row["transport"],
            str(row["tools"]),
            str(row["restarts"]),
            str(row["health_failures"]),
            "-" if row["uptime"] is None else f"{row['uptime']:.0f}",
            str(row["pid"] or "-"),
            _mib(row["rss_bytes"]),
        )
    frontends = Table(title="frontends", title_justify="left")
    for column in ("frontend", "calls", "errors", "active clients (5 min)", "connected"):
        frontends.add_column(column)
    for name, row in sorted(snapshot["frontends"].items()):
        connected = "-" if row["connected"] is None else str(row["connected"])
        frontends.add_row(
            Text(name), str(row["calls"]), str(row["errors"]), str(row["active_clients"]), connected
        )
    parts: list[Any] = [head, upstreams, frontends]
    parts.append(_calls_table("tools", "tool", snapshot["tools"]))
    parts.append(_calls_table("servers", "server", snapshot["servers"]))
    if snapshot.get("methods"):
        parts.append(_calls_table("other requests", "method", snapshot["methods"]))
    if not snapshot.get("metrics_enabled", True):
        parts.append(Text("metrics are off (gateway.metrics: false): no calls are counted", style="yellow"))
    return Group(*parts)
