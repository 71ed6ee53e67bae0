"""`nexus cache`: clear or show the result cache of a running gateway over its admin API."""

from __future__ import annotations

from typing import Annotated

import typer

from mcp_nexus.cli_options import TokenOption, UrlOption, admin_request

app = typer.Typer(help="The result cache of a running gateway.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Keeps `clear` a subcommand even while it is the only one."""


@app.command()
def clear(
    tool: Annotated[str | None, typer.Argument(help="Exposed tool name; omit to clear everything.")] = None,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Drop cached results (of one tool, or all)."""
    answer = admin_request("POST", url, "/api/cache/clear", token, {"tool": tool} if tool else {}, timeout=10)
    what = f" of {tool}" if tool else ""
    typer.echo(f"cleared {answer['cleared']} cached results{what}; {answer['entries']} left")


@app.command()
def stats(url: UrlOption = None, token: TokenOption = None) -> None:
    """Show entries, bytes and per-tool hits and misses."""
    answer = admin_request("GET", url, "/api/cache", token, timeout=10)
    typer.echo(f"{answer['entries']} entries, {answer['bytes']} bytes, {answer['evictions']} evicted")
    for name, counts in answer["tools"].items():
        typer.echo(f"  {name}: {counts['hits']} hits, {counts['misses']} misses, {counts['merged']} merged")
