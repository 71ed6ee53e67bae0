"""`nexus cache`: clear or show the result cache of a running gateway over its admin API."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcp_nexus.admin_client import DEFAULT_URL, AdminClient, AdminError

app = typer.Typer(help="The result cache of a running gateway.", no_args_is_help=True)

UrlOption = Annotated[
    str,
    typer.Option("--url", envvar="NEXUS_URL", help="The gateway's base URL (default: $NEXUS_URL or local)."),
]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="NEXUS_TOKEN", help="Bearer token (default: $NEXUS_TOKEN).")
]


@app.callback()
def _group() -> None:
    """Keeps `clear` a subcommand even while it is the only one."""


def _request(method: str, url: str, path: str, token: str | None, body: dict[str, Any] | None = None) -> Any:
    try:
        return AdminClient(url, token, timeout=10).request(method, path, body)
    except AdminError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


@app.command()
def clear(
    tool: Annotated[str | None, typer.Argument(help="Exposed tool name; omit to clear everything.")] = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """Drop cached results (of one tool, or all)."""
    answer = _request("POST", url, "/api/cache/clear", token, {"tool": tool} if tool else {})
    what = f" of {tool}" if tool else ""
    typer.echo(f"cleared {answer['cleared']} cached results{what}; {answer['entries']} left")


@app.command()
def stats(url: UrlOption = DEFAULT_URL, token: TokenOption = None) -> None:
    """Show entries, bytes and per-tool hits and misses."""
    answer = _request("GET", url, "/api/cache", token)
    typer.echo(f"{answer['entries']} entries, {answer['bytes']} bytes, {answer['evictions']} evicted")
    for name, counts in answer["tools"].items():
        typer.echo(f"  {name}: {counts['hits']} hits, {counts['misses']} misses, {counts['merged']} merged")
