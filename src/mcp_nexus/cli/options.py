"""What every command that talks to a running gateway shares: its options and its one admin request.

Light on purpose (typer only): cli/app.py reads these at import, and `nexus --help` must start fast.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="NEXUS_URL", help="Base URL of the running gateway (default: $NEXUS_URL or local)."
    ),
]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="NEXUS_TOKEN", help="Bearer token (default: $NEXUS_TOKEN).")
]
PIPED_HELP = (
    "Piped or redirected, it prints a header line, then one line per row with tab-separated columns "
    "(never wrapped or cut; a tab, newline or other control character in a value prints as \\t, \\n, "
    "\\xNN, a backslash as \\\\); any other line (a title, a total) starts with '# '. "
    "--json prints the same data as JSON."
)
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
    from rich.console import Console

    from mcp_nexus.cli.admin_client import AdminClient, AdminError, default_url

    try:
        return AdminClient(url or default_url(), token, timeout=timeout).request(method, path, body)
    except AdminError as exc:
        Console(stderr=True, soft_wrap=True).print(str(exc), style="red", highlight=False, markup=False)
        raise typer.Exit(1) from exc


HOST_HELP = "Address to listen on: an IP address or a host name (default 127.0.0.1)."
PORT_HELP = "Port, 0-65535; 0 picks a free one (default 8787)."
_HOST_NAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)


def check_host(value: str | None) -> str | None:
    """--host: an IP address (IPv6 with or without brackets) or a host name by its syntax; else a usage error."""
    if value is None:
        return None
    import ipaddress

    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    # All-numeric labels make an address, not a name: 999.1.1.1 is a bad address.
    if _HOST_NAME.fullmatch(value) and not value.rstrip(".").replace(".", "").isdigit():
        return value
    raise typer.BadParameter(f"{value!r} is neither an IP address nor a host name")


def check_port(value: int | None) -> int | None:
    """--port: 0-65535 (0: the system picks a free port); else a usage error that gives the range."""
    if value is not None and not 0 <= value <= 65535:
        raise typer.BadParameter(f"{value} is not a port: give 0-65535 (0 picks a free one)")
    return value


def server_request(action: str, name: str, url: str | None, token: str | None) -> Any:
    """POST /api/servers/NAME/ACTION; an unknown name ends the command listing the gateway's servers."""
    from rich.console import Console

    from mcp_nexus.cli.admin_client import AdminClient, AdminError, default_url

    try:
        return AdminClient(url or default_url(), token).request("POST", f"/api/servers/{name}/{action}")
    except AdminError as exc:
        message = str(exc)
        known = exc.body.get("servers") if isinstance(exc.body, dict) else None
        if exc.status == 404 and isinstance(known, list):
            message = unknown_name_message(
                f"no server named {name!r}", name, [str(k) for k in known], "servers"
            )
        Console(stderr=True, soft_wrap=True).print(message, style="red", highlight=False, markup=False)
        raise typer.Exit(1) from exc


def unknown_name_message(problem: str, name: str, known: list[str], kind: str) -> str:
    """`problem`, then what there is and the closest names: 'no server named 'nosuch'; servers: a, b; did you mean 'b'?'."""
    import difflib

    listed = ", ".join(known) if known else "none"
    closest = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = "; did you mean " + " or ".join(repr(c) for c in closest) + "?" if closest else ""
    return f"{problem}; {kind}: {listed}{hint}"
