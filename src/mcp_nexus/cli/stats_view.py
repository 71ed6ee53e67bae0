"""`nexus stats`: the running gateway's `/api/metrics` as tables (gateway, upstreams, frontends, tools, servers)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from mcp_nexus.cli.table import Column, Listing, is_piped, print_listing, print_note, rich_table


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _mib(size: int | None) -> str:
    return "-" if size is None else f"{size / 1048576:.1f}"


def _number(header: str) -> Column:
    return Column(header, justify="right")


def _calls_listing(title: str, label: str, rows: dict[str, dict[str, Any]]) -> Listing:
    listing = Listing(
        (
            Column(label, key=True),
            _number("calls"),
            _number("errors"),
            *(_number(header) for header in ("avg ms", "min", "max", "p50", "p95", "p99")),
            *(_number(header) for header in ("cache hit/miss", "limited", "offloads", "retries")),
            _number("fallbacks"),
            _number("timeouts"),
        ),
        title,
    )
    for name, row in sorted(rows.items()):
        lat = row["latency"]
        errors = ", ".join(f"{k} {v}" for k, v in sorted(row["errors_by_class"].items())) or "0"
        listing.add(
            name,
            str(row["calls"]),
            Text(errors, style="red" if row["errors"] else ""),
            *(_ms(lat[figure]) for figure in ("avg", "min", "max", "p50", "p95", "p99")),
            f"{row['cache_hits']}/{row['cache_misses']}",
            str(row["rate_limited"]),
            f"{row['offloads']} ({row['offload_bytes_kept_out']} B)" if row["offloads"] else "0",
            str(row["retries"]),
            str(row["fallbacks"]),
            str(row["timeouts"]),
        )
    return listing


def stats_parts(snapshot: dict[str, Any]) -> tuple[str, list[Listing], str | None]:
    """One `/api/metrics` answer: the headline, the tables, and a closing warning if metrics are off."""
    gw = snapshot["gateway"]
    head = (
        f"Nexus {snapshot['version']}: up {gw['uptime']:.0f} s, {gw['servers_running']}/{gw['servers']} servers "
        f"running, {gw['processes']} processes, {gw['tools']} tools ({gw['embedded_tools']} embedded), "
        f"{gw['in_flight']} in flight, memory {_mib(gw['rss_bytes'])} MiB, cache {gw['cache_entries']} entries "
        f"({gw['cache_bytes']} B). Latency over the last {snapshot['window']} calls, in ms."
    )
    upstreams = Listing(
        (
            Column("server", key=True),
            Column("state"),
            Column("transport"),
            *(_number(header) for header in ("tools", "restarts", "health fails", "uptime s", "pid")),
            _number("RSS MiB"),
        ),
        "upstreams",
    )
    for name, row in sorted(snapshot["upstreams"].items()):
        state = row["state"]
        upstreams.add(
            name,
            Text(state, style="green" if state == "READY" else "yellow" if state == "CONNECTING" else "red"),
            row["transport"],
            str(row["tools"]),
            str(row["restarts"]),
            str(row["health_failures"]),
            "-" if row["uptime"] is None else f"{row['uptime']:.0f}",
            str(row["pid"] or "-"),
            _mib(row["rss_bytes"]),
        )
    frontends = Listing(
        (
            Column("frontend", key=True),
            _number("calls"),
            _number("errors"),
            _number("active clients (5 min)"),
            _number("connected"),
        ),
        "frontends",
    )
    for name, row in sorted(snapshot["frontends"].items()):
        connected = "-" if row["connected"] is None else str(row["connected"])
        frontends.add(name, str(row["calls"]), str(row["errors"]), str(row["active_clients"]), connected)
    listings = [upstreams, frontends, _calls_listing("tools", "tool", snapshot["tools"])]
    listings.append(_calls_listing("servers", "server", snapshot["servers"]))
    if snapshot.get("methods"):
        listings.append(_calls_listing("other requests", "method", snapshot["methods"]))
    off = None
    if not snapshot.get("metrics_enabled", True):
        off = "metrics are off (gateway.metrics: false): no calls are counted"
    return head, listings, off


def render_stats(snapshot: dict[str, Any], width: int) -> Group:
    """The terminal view: the headline and rich tables for a terminal `width` wide."""
    head, listings, off = stats_parts(snapshot)
    parts: list[Any] = [Text(head), *(rich_table(listing, width) for listing in listings)]
    if off:
        parts.append(Text(off, style="yellow"))
    return Group(*parts)


def print_stats(snapshot: dict[str, Any], console: Console) -> None:
    """On a terminal, the tables; piped, the headline, then each table after a `# title` line."""
    if not is_piped(console):
        console.print(render_stats(snapshot, console.width), crop=False)
        return
    head, listings, off = stats_parts(snapshot)
    print_note(head, console)
    for listing in listings:
        print_listing(listing, console, section=True)
    if off:
        print_note(off, console)


def watch_stats(
    first: dict[str, Any], fetch: Callable[[], dict[str, Any]], every: float, console: Console
) -> None:
    """Redraw every `every` seconds until Ctrl-C, whose KeyboardInterrupt goes on up (exit status 130).

    Piped, each snapshot is printed after the previous one, a blank line between them.
    """
    if is_piped(console):
        snapshot = first
        while True:
            print_stats(snapshot, console)
            time.sleep(every)
            snapshot = fetch()
            print_note("", console)
    live = Live(console=console, auto_refresh=False)
    # Not `with live`: a Ctrl-C inside start() (cursor hidden, stdout redirected) would skip
    # __exit__ and leave the terminal so; stop() undoes whatever start() got to.
    try:
        live.start()
        live.update(render_stats(first, console.width), refresh=True)
        while True:
            time.sleep(every)
            live.update(render_stats(fetch(), console.width), refresh=True)
    finally:
        try:
            live.stop()
        except IndexError:  # start() was cut short before it pushed what stop() pops
            console.show_cursor(True)
