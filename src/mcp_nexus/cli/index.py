"""`nexus index`: the tool index of a running gateway (admin API), or of a saved index file (--local/--store).

nexus index status                 where the contents came from, stale or not, per server
nexus index ls [--tag navigation] [--query "move the robot"]
nexus index show NAME
nexus index sync                   ask every server for its tools now
nexus index export FILE            the controller design's JSON document
nexus index import FILE
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated
from urllib.parse import quote, urlencode

import typer
from rich.console import Console

from mcp_nexus.catalog.index_snapshot import IndexFormatError, IndexSnapshot
from mcp_nexus.catalog.index_store import IndexStoreError
from mcp_nexus.cli.options import PIPED_HELP, JsonOption, TokenOption, UrlOption, admin_request
from mcp_nexus.cli.table import (
    Column,
    Listing,
    first_line,
    print_json,
    print_line,
    print_listing,
    print_note,
)
from mcp_nexus.stores.index_location import default_index_path, open_index_store

app = typer.Typer(help="The tool index: saved snapshot of every server's tools.", no_args_is_help=True)
out = Console()
err = Console(stderr=True, soft_wrap=True)

LocalOption = Annotated[
    bool, typer.Option("--local", help="Use the index file in the data folder instead of a running gateway.")
]
StoreOption = Annotated[
    Path | None,
    typer.Option("--store", help="Use this index file (.sqlite3 or .json) instead of a running gateway."),
]


def _offline(local: bool, store: Path | None) -> Path | None:
    if store is not None:
        return store
    return default_index_path() if local else None


def _load_file(path: Path) -> IndexSnapshot:
    try:
        snapshot = asyncio.run(open_index_store(path).load())
    except IndexStoreError as exc:
        err.print(str(exc), style="red", highlight=False, markup=False)
        raise typer.Exit(1) from exc
    if snapshot is None:
        err.print(f"no tool index saved at {path}", style="red", highlight=False, markup=False)
        raise typer.Exit(1)
    return snapshot


@app.command(epilog=PIPED_HELP)
def status(url: UrlOption = None, token: TokenOption = None, as_json: JsonOption = False) -> None:
    """Where the index came from (cache, sync, stale-cache, empty), its age, and each server's part."""
    answer = admin_request("GET", url, "/api/index", token)
    if as_json:
        print_json(answer)
        return
    stale = " [STALE]" if answer["stale"] else ""
    print_note(
        f"{answer['tools']} tools, source {answer['source']}{stale}, last sync {answer['last_sync'] or '-'}, "
        f"version {answer['version']}",
        out,
    )
    print_note(answer["message"], out)
    if answer.get("saved_to"):
        print_note(f"saved to {answer['saved_to']}", out)
    if answer.get("save_error"):
        print_line(answer["save_error"], err, style="yellow")
    listing = Listing(
        (
            Column("server", key=True),
            Column("state"),
            Column("tools", justify="right"),
            Column("last sync"),
            Column("error"),
        ),
        "servers",
    )
    for row in answer["servers"]:
        listing.add(
            row["server_id"],
            row["state"],
            str(row["tools"]),
            row.get("last_sync") or "-",
            row.get("error") or "",
        )
    print_listing(listing, out)


@app.command("ls", epilog=PIPED_HELP)
def list_tools(
    tag: Annotated[
        str | None, typer.Option("--tag", help="Only tools with this tag, e.g. navigation.")
    ] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", help="Search (BM25), best first.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 1000,
    url: UrlOption = None,
    token: TokenOption = None,
    local: LocalOption = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the index's tools (all, by tag, or the best matches of a query)."""
    path = _offline(local, store)
    if path is None:
        params = {k: v for k, v in {"tag": tag, "q": query, "limit": str(limit)}.items() if v}
        rows = admin_request("GET", url, f"/api/index/tools?{urlencode(params)}", token)["tools"]
    else:
        from mcp_nexus.catalog.index import ToolIndex

        index = ToolIndex(_load_file(path))
        found = index.search(query, [tag] if tag else None, limit) if query else None
        if found is None:
            found = (index.get_tools_by_tag(tag) if tag else index.get_all_tools())[:limit]
        rows = [entry.as_dict() for entry in found]
    if as_json:
        print_json(rows)
        return
    listing = Listing(
        (
            Column("tool", key=True),
            Column("server", key=True),
            Column("tags"),
            Column("blocking"),
            Column("cost"),
            Column("description", one_line=True),
        ),
        f"{len(rows)} tools" + (f" tagged {tag}" if tag else ""),
    )
    for row in rows:
        listing.add(
            row["name"],
            row["server_id"],
            ", ".join(row["tags"]),
            "yes" if row["blocking"] else "no",
            row["cost_estimate"],
            first_line(row.get("description")),
        )
    print_listing(listing, out)


@app.command()
def show(
    name: Annotated[str, typer.Argument(help="Exposed name (server.tool) or the server's own tool name.")],
    url: UrlOption = None,
    token: TokenOption = None,
    local: LocalOption = False,
    store: StoreOption = None,
) -> None:
    """Print one tool's entry as JSON."""
    path = _offline(local, store)
    if path is None:
        entry = admin_request("GET", url, f"/api/index/tools/{quote(name, safe='')}", token)
    else:
        from mcp_nexus.catalog.index import ToolIndex

        found = ToolIndex(_load_file(path)).get_tool_entry(name)
        if found is None:
            err.print(f"no tool named {name!r} in {path}", style="red", highlight=False, markup=False)
            raise typer.Exit(1)
        entry = found.as_dict()
    print_json(entry)


@app.command()
def sync(url: UrlOption = None, token: TokenOption = None, as_json: JsonOption = False) -> None:
    """Ask every server of the running gateway for its tools now (the sync rules decide what is kept)."""
    answer = admin_request("POST", url, "/api/index/sync", token)
    if as_json:
        print_json(answer)
        return
    print_line(answer["message"], out)
    if answer["source"] in ("stale-cache", "empty"):
        raise typer.Exit(1)


@app.command("export")
def export_index(
    file: Annotated[Path, typer.Argument(help="Where to write the JSON document ('-' for stdout).")],
    url: UrlOption = None,
    token: TokenOption = None,
    local: LocalOption = False,
    store: StoreOption = None,
) -> None:
    """Write the index as the controller design's JSON document."""
    path = _offline(local, store)
    document = (
        admin_request("GET", url, "/api/index/export", token)
        if path is None
        else _load_file(path).to_document()
    )
    text = json.dumps(document, indent=2, ensure_ascii=False)
    if str(file) == "-":
        print(text)
        return
    try:
        file.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        err.print(f"cannot write {file}: {exc.strerror or exc}", style="red", highlight=False, markup=False)
        raise typer.Exit(2) from exc
    count = sum(len(server.get("tools", [])) for server in document["servers"])
    err.print(
        f"wrote {count} tools of {len(document['servers'])} servers to {file}", highlight=False, markup=False
    )


@app.command("import")
def import_index(
    file: Annotated[Path, typer.Argument(help="A JSON document in the design's format.")],
    url: UrlOption = None,
    token: TokenOption = None,
    local: LocalOption = False,
    store: StoreOption = None,
) -> None:
    """Replace the index with a JSON document (a running gateway's, or the saved file with --local/--store)."""
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        err.print(f"cannot read {file}: {exc}", style="red", highlight=False, markup=False)
        raise typer.Exit(2) from exc
    path = _offline(local, store)
    if path is None:
        answer = admin_request("POST", url, "/api/index/import", token, document)
        print_line(f"{answer['tools']} tools: {answer['message']}", out)
        for reason in answer.get("skipped", []):
            print_line(f"# skipped: {reason}", out)
        return
    skipped: list[str] = []
    try:
        snapshot = IndexSnapshot.from_document(document, skip_bad_names=True, skipped=skipped)
        asyncio.run(open_index_store(path).save(snapshot))
    except IndexFormatError as exc:
        err.print(f"{file} is not a tool index document: {exc}", style="red", highlight=False, markup=False)
        raise typer.Exit(2) from exc
    except IndexStoreError as exc:
        err.print(str(exc), style="red", highlight=False, markup=False)
        raise typer.Exit(1) from exc
    print_line(f"saved {snapshot.tool_count} tools to {path}", out)
    for reason in skipped:
        print_line(f"# skipped: {reason}", out)
