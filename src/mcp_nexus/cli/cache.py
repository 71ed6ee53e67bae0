"""`nexus cache`: clear or show the result cache of a running gateway over its admin API."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from mcp_nexus.cli.options import PIPED_HELP, JsonOption, TokenOption, UrlOption, admin_request
from mcp_nexus.cli.table import Column, Listing, print_json, print_listing, print_note

app = typer.Typer(help="The result cache of a running gateway.", no_args_is_help=True)
out = Console()


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


@app.command(epilog=PIPED_HELP)
def stats(url: UrlOption = None, token: TokenOption = None, as_json: JsonOption = False) -> None:
    """Show entries, bytes and per-tool hits and misses."""
    answer = admin_request("GET", url, "/api/cache", token, timeout=10)
    if as_json:
        print_json(answer)
        return
    print_note(f"{answer['entries']} entries, {answer['bytes']} bytes, {answer['evictions']} evicted", out)
    listing = Listing(
        (
            Column("tool", key=True),
            Column("hits", justify="right"),
            Column("misses", justify="right"),
            Column("merged", justify="right"),
        ),
        "per tool",
    )
    for name, counts in answer["tools"].items():
        listing.add(name, str(counts["hits"]), str(counts["misses"]), str(counts["merged"]))
    print_listing(listing, out)
