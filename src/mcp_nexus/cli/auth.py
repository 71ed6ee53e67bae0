"""`nexus auth`: OAuth logins of a running gateway to its upstream servers (docs/OAUTH.md).

`login` asks the gateway to start the flow and prints the authorization URL (and opens a
browser when this machine has one); the authorization server sends the browser back to the
gateway's `/oauth/callback`, and the command waits until the server is READY (or says why not).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any
from urllib.parse import quote

import typer
from rich.console import Console

from mcp_nexus.cli.options import PIPED_HELP, JsonOption, TokenOption, UrlOption, admin_request
from mcp_nexus.cli.table import Column, Listing, print_json, print_listing

app = typer.Typer(help="OAuth logins of a running gateway to its upstream servers.", no_args_is_help=True)
out = Console()
err = Console(stderr=True, soft_wrap=True)

ServerArgument = Annotated[str, typer.Argument(help="The server's name in the config.")]


def _path(server: str, action: str = "") -> str:
    return f"/api/auth/{quote(server, safe='')}" + (f"/{action}" if action else "")


def _has_browser() -> bool:
    # A desktop session (or macOS/Windows, which always have one); over SSH the URL is for the operator.
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) and not os.environ.get(
        "SSH_CONNECTION"
    )


@app.command()
def login(
    server: ServerArgument,
    url: UrlOption = None,
    token: TokenOption = None,
    browser: Annotated[
        bool, typer.Option("--browser/--no-browser", help="Open the URL in a browser when there is one.")
    ] = True,
    wait: Annotated[
        float,
        typer.Option(
            "--wait", min=0, help="Seconds to wait for the login to finish; 0 = print the URL and return."
        ),
    ] = 300.0,
) -> None:
    """Log the gateway in to an OAuth-protected server: prints the URL to open, then waits."""
    started = admin_request("POST", url, _path(server, "login"), token, timeout=60)
    authorization_url = started.get("authorization_url")
    if not authorization_url:
        typer.echo(f"{server}: the stored login works; no new login needed")
        return
    typer.echo(f"Open this URL to log {server} in:\n\n  {authorization_url}\n")
    if browser and _has_browser():
        import webbrowser

        webbrowser.open(authorization_url)
    if wait <= 0:
        return
    deadline = time.monotonic() + wait
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        time.sleep(0.5)
        status = admin_request("GET", url, _path(server), token, timeout=10)
        if status.get("login") == "logged in" and status.get("state") in ("READY", "DEGRADED"):
            typer.echo(f"{server}: logged in, {status['state']}")
            return
        if status.get("login") != "in progress" and status.get("last_error"):
            err.print(
                f"{server}: the login failed: {status['last_error']}",
                style="red",
                highlight=False,
                markup=False,
            )
            raise typer.Exit(1)
    err.print(
        f"{server}: not logged in after {wait:g} s (login {status.get('login')}, state {status.get('state')})",
        style="red",
        highlight=False,
        markup=False,
    )
    raise typer.Exit(1)


@app.command()
def logout(server: ServerArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Forget a server's login (tokens and registration); it waits in NEEDS_AUTH for a new one."""
    answer = admin_request("POST", url, _path(server, "logout"), token, timeout=60)
    typer.echo(f"{server}: logged out" if answer.get("removed") else f"{server}: had no stored login")


@app.command(epilog=PIPED_HELP)
def status(url: UrlOption = None, token: TokenOption = None, as_json: JsonOption = False) -> None:
    """Every OAuth server's login: state, whether a login is needed and why, expiry, scope."""
    answer = admin_request("GET", url, "/api/auth", token, timeout=10)
    if as_json:
        print_json(answer)
        return
    listing = Listing(
        (
            Column("server", key=True),
            Column("state"),
            Column("login"),
            Column("expires in", justify="right"),
            Column("scope"),
            Column("to do"),
        ),
        "OAuth logins",
    )
    for row in answer["servers"]:
        expires = row.get("expires_in")
        todo = row["login_command"] if row["login"] in ("needed", "none") else (row.get("reason") or "")
        listing.add(
            row["server"],
            str(row.get("state") or ""),
            row["login"],
            "" if expires is None else f"{expires} s",
            row.get("scope") or "",
            todo,
        )
    print_listing(listing, out)
