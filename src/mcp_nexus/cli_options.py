"""Options every command that talks to a running gateway shares (one definition, one help text)."""

from __future__ import annotations

from typing import Annotated

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
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
