"""`nexus plugins`: the transports, pipeline steps and embedded servers installed, and where from.

    nexus plugins           one row per entry point: group, name, distribution and version, module
    nexus plugins --json    the same as a list of objects

Read from this Python environment's installed metadata (what `nexus serve` run from it loads),
not from a running gateway. A plugin that failed to import or to validate is shown with its
error (and the gateway runs without it); the exit status is then 1.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import typer
from rich.console import Console

from mcp_nexus.cli.options import JsonOption

HELP = "Installed plugins: transports, pipeline steps and embedded servers, and where from."

app = typer.Typer(help=HELP, invoke_without_command=True)


def plugin_rows() -> list[dict[str, Any]]:
    """Every entry point of the three groups, loaded and checked; step placement problems included."""
    from mcp_nexus.plugins.builtin import STEPS_GROUP
    from mcp_nexus.plugins.registry import registry
    from mcp_nexus.plugins.step_order import order_steps

    found = registry()
    records = found.records()
    _ordered, problems = order_steps(found.steps())
    rows = []
    for record in records:
        if record.group == STEPS_GROUP and record.error is None and record.name in problems:
            record = replace(record, error=problems[record.name])
        row = asdict(record)
        row["module"] = record.module
        rows.append(row)
    return rows


@app.callback()
def plugins(as_json: JsonOption = False) -> None:
    """Installed plugins: transports, pipeline steps and embedded servers, and where from."""
    from mcp_nexus.cli.table import Column, Listing, print_json, print_listing

    rows = plugin_rows()
    failed = [row for row in rows if row["error"]]
    if as_json:
        print_json(rows)
    else:
        listing = Listing(
            [
                Column("GROUP", key=True),
                Column("NAME", key=True),
                Column("DISTRIBUTION", key=True),
                Column("MODULE", key=True),
                Column("STATUS"),
            ]
        )
        for row in rows:
            origin = f"{row['distribution'] or '?'} {row['version'] or ''}".strip()
            status = f"failed: {row['error']}" if row["error"] else "built-in" if row["builtin"] else "loaded"
            listing.rows.append(
                [row["group"].removeprefix("mcp_nexus."), row["name"], origin, row["module"], status]
            )
        print_listing(listing, Console())
    if failed:
        raise typer.Exit(1)
