"""`nexus device` commands."""

import typer

app = typer.Typer(help="The built-in device server.", no_args_is_help=True)
