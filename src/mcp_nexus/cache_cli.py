"""`nexus cache`: clear or show the result cache of a running gateway over its admin API."""

from __future__ import annotations

from typing import Annotated, Any

import httpx2
import typer

DEFAULT_URL = "http://127.0.0.1:8787"

app = typer.Typer(help="The result cache of a running gateway.", no_args_is_help=True)

UrlOption = Annotated[str, typer.Option("--url", help="The gateway's base URL.")]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="NEXUS_TOKEN", help="Bearer token (default: $NEXUS_TOKEN).")
]


@app.callback()
def _group() -> None:
    """Keeps `clear` a subcommand even while it is the only one."""


def _request(method: str, url: str, token: str | None, body: dict[str, Any] | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx2.request(method, url, json=body, headers=headers, timeout=10)
    except httpx2.HTTPError as exc:
        typer.echo(f"error: cannot reach the gateway at {url}: {exc}", err=True)
        raise typer.Exit(1) from exc
    if response.status_code in (401, 403):
        typer.echo(
            f"error: the gateway refused the request ({response.status_code}): set --token or NEXUS_TOKEN",
            err=True,
        )
        raise typer.Exit(1)
    if response.status_code != 200:
        typer.echo(f"error: the gateway answered {response.status_code}: {response.text[:500]}", err=True)
        raise typer.Exit(1)
    return response.json()


@app.command()
def clear(
    tool: Annotated[str | None, typer.Argument(help="Exposed tool name; omit to clear everything.")] = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """Drop cached results (of one tool, or all)."""
    answer = _request("POST", url.rstrip("/") + "/api/cache/clear", token, {"tool": tool} if tool else {})
    what = f" of {tool}" if tool else ""
    typer.echo(f"cleared {answer['cleared']} cached results{what}; {answer['entries']} left")


@app.command()
def stats(url: UrlOption = DEFAULT_URL, token: TokenOption = None) -> None:
    """Show entries, bytes and per-tool hits and misses."""
    answer = _request("GET", url.rstrip("/") + "/api/cache", token)
    typer.echo(f"{answer['entries']} entries, {answer['bytes']} bytes, {answer['evictions']} evicted")
    for name, counts in answer["tools"].items():
        typer.echo(f"  {name}: {counts['hits']} hits, {counts['misses']} misses, {counts['merged']} merged")
