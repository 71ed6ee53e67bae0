"""`nexus cortex` commands."""

import typer

app = typer.Typer(help="The built-in cortex server.", no_args_is_help=True)
