"""The `nexus` command line."""

from __future__ import annotations

import typer

from mcp_nexus.builtin.cortex.cli import app as cortex_app
from mcp_nexus.builtin.device.cli import app as device_app

app = typer.Typer(help="Nexus: many MCP servers behind one governed endpoint.", no_args_is_help=True)
app.add_typer(cortex_app, name="cortex")
app.add_typer(device_app, name="device")
