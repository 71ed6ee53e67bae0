"""`nexus audit`: check, read and export the audit log (docs/IDENTITY.md, "Audit log").

    nexus audit verify              the chain is whole, or the first line where it is not (exit 1)
    nexus audit tail [-n 20]        the last records, one row each (--json: the records)
    nexus audit export [filters]    the records as JSON lines or CSV on stdout

Read from the log's folder (`--dir`, default `<data dir>/audit`, as `gateway.audit.dir` says
for the gateway), not from a running gateway: the files are the record, whoever wrote them.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import deque
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from mcp_nexus.cli.options import JsonOption

HELP = "The audit log of tool calls and admin actions: verify its chain, tail it, export it."

app = typer.Typer(help=HELP, no_args_is_help=True)

DirOption = Annotated[
    Path | None,
    typer.Option("--dir", help="The audit log's folder (default: <data dir>/audit, $NEXUS_DATA_DIR)."),
]
EXPORT_FIELDS = [
    "seq",
    "time",
    "kind",
    "who",
    "subject",
    "client_id",
    "client",
    "frontend",
    "tool",
    "server",
    "action",
    "status",
    "outcome",
    "error_class",
    "latency_ms",
    "trace_id",
    "arguments_sha256",
]


def _folder(given: Path | None) -> Path:
    from mcp_nexus.audit.writer import audit_folder
    from mcp_nexus.config.audit import AuditSettings

    folder = given or audit_folder(AuditSettings())
    if not folder.is_dir():
        typer.echo(f"error: no audit log at {folder} (is gateway.audit on? another --dir?)", err=True)
        raise typer.Exit(2)
    return folder


def _records(folder: Path) -> Any:
    from mcp_nexus.audit.chain import lines

    for path, number, raw in lines(folder):
        try:
            yield json.loads(raw)
        except ValueError:
            typer.echo(f"warning: {path.name} line {number} is not JSON (run nexus audit verify)", err=True)


@app.command()
def verify(folder: DirOption = None) -> None:
    """Check the hash chain: an edited, removed or reordered line is named, and the exit status is 1."""
    from mcp_nexus.audit.chain import verify as verify_chain

    verdict = verify_chain(_folder(folder))
    if not verdict.ok:
        typer.echo(f"audit log broken: {verdict.problem}")
        raise typer.Exit(1)
    head = f", head {verdict.head.hash}" if verdict.head is not None else ""
    typer.echo(f"audit log intact: {verdict.lines} records in {verdict.files} files{head}")


@app.command()
def tail(
    folder: DirOption = None,
    count: Annotated[int, typer.Option("-n", "--lines", min=1, help="How many of the last records.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """The last records: time, who, client, what, outcome and latency."""
    from mcp_nexus.cli.table import Column, Listing, print_json, print_listing

    last = list(deque(_records(_folder(folder)), maxlen=count))
    if as_json:
        print_json(last)
        return
    listing = Listing(
        [
            Column("SEQ", key=True, justify="right"),
            Column("TIME"),
            Column("WHO", key=True),
            Column("CLIENT"),
            Column("WHAT", key=True),
            Column("OUTCOME"),
            Column("MS", justify="right"),
        ]
    )
    for record in last:
        what = record.get("tool") or record.get("action") or f"{record.get('count', '')} dropped"
        listing.rows.append(
            [
                str(record.get("seq")),
                str(record.get("time", "")),
                str(record.get("who", "")),
                str(record.get("client_id") or record.get("client") or ""),
                str(what),
                str(record.get("outcome") or record.get("kind")),
                str(record.get("latency_ms", "")),
            ]
        )
    print_listing(listing, Console(soft_wrap=True))


@app.command()
def export(
    folder: DirOption = None,
    since: Annotated[str | None, typer.Option(help="Only records at or after this ISO time.")] = None,
    until: Annotated[str | None, typer.Option(help="Only records before this ISO time.")] = None,
    who: Annotated[str | None, typer.Option(help="Only this caller (e.g. user:alice, http:claude).")] = None,
    kind: Annotated[str | None, typer.Option(help="Only tool_call, admin or dropped records.")] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="jsonl (every field) or csv (the main ones).")
    ] = "jsonl",
) -> None:
    """Every record (or the filtered ones) on stdout, oldest first."""
    if fmt not in ("jsonl", "csv"):
        typer.echo(f"error: --format must be jsonl or csv, got {fmt!r}", err=True)
        raise typer.Exit(2)
    writer = csv.DictWriter(sys.stdout, EXPORT_FIELDS, extrasaction="ignore") if fmt == "csv" else None
    if writer is not None:
        writer.writeheader()
    for record in _records(_folder(folder)):
        time = str(record.get("time", ""))
        if (
            (since and time < since)
            or (until and time >= until)
            or (who and record.get("who") != who)
            or (kind and record.get("kind") != kind)
        ):
            continue
        if writer is not None:
            writer.writerow(record)
        else:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
