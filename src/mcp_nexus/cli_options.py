"""What every command that talks to a running gateway shares: its options and its one admin request."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from mcp_nexus.admin_client import AdminClient, AdminError, default_url

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="NEXUS_URL", help="Base URL of the running gateway (default: $NEXUS_URL or local)."
    ),
]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="NEXUS_TOKEN", help="Bearer token (default: $NEXUS_TOKEN).")
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print the same data as JSON: what a script should read.")
]


def admin_request(
    method: str,
    url: str | None,
    path: str,
    token: str | None,
    body: dict[str, Any] | None = None,
    *,
    timeout: float = 120,
) -> Any:
    """One admin API request; an error ends the command with the message that says what to do."""
    try:
        return AdminClient(url or default_url(), token, timeout=timeout).request(method, path, body)
    except AdminError as exc:
        Console(stderr=True, soft_wrap=True).print(str(exc), style="red", highlight=False, markup=False)
        raise typer.Exit(1) from exc
