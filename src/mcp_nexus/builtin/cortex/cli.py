"""`nexus cortex` commands: use a knowledge folder from the shell, or serve it over MCP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from mcp_nexus.builtin.cortex.entropy import build_entropy_report
from mcp_nexus.builtin.cortex.errors import CortexError
from mcp_nexus.builtin.cortex.memory_import import import_memory_file
from mcp_nexus.builtin.cortex.records import utc_now
from mcp_nexus.builtin.cortex.settings import DIR_ENV_VAR, default_knowledge_dir
from mcp_nexus.builtin.cortex.store import KnowledgeStore

app = typer.Typer(help="The built-in cortex server.", no_args_is_help=True)

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        envvar=DIR_ENV_VAR,
        # paths.py: the data folder is $NEXUS_DATA_DIR, else the platform's user data folder `mcp-nexus`.
        help="Knowledge folder (default: the data folder's cortex/: $NEXUS_DATA_DIR/cortex, "
        "else ~/.local/share/mcp-nexus/cortex on Linux)",
    ),
]
CategoriesOption = Annotated[
    str | None,
    typer.Option(
        "--categories", help="Comma-separated categories (default: concepts,tech_stack,people,projects)"
    ),
]


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def _open_store(directory: Path | None, categories: str | None = None) -> KnowledgeStore:
    chosen = [c.strip() for c in categories.split(",")] if categories else None
    try:
        store = KnowledgeStore(directory or default_knowledge_dir(), chosen)
        store.refresh()
    except (CortexError, OSError) as exc:
        _fail(str(exc))
    for problem in store.problems():
        typer.echo(f"warning: {problem.file} line {problem.line}: {problem.reason}", err=True)
    return store


def _print(payload: Any) -> None:
    typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))


@app.command()
def add(
    category: Annotated[str, typer.Argument(help="Category, e.g. concepts")],
    entity_id: Annotated[str, typer.Argument(metavar="ID", help="Kebab-case id, e.g. fast-api")],
    type: Annotated[str, typer.Option("--type", "-t", help="Entity type, e.g. framework")],
    name: Annotated[str, typer.Option("--name", "-n", help="Display name")],
    desc: Annotated[str, typer.Option("--desc", "-d", help="Description")] = "",
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable)")] = None,
    directory: DirOption = None,
    categories: CategoriesOption = None,
) -> None:
    """Add an entity (fails if the id already exists)."""
    store = _open_store(directory, categories)
    try:
        _print(store.add_entity(category, entity_id, type, name, desc, tag or []).to_json())
    except CortexError as exc:
        _fail(str(exc))


@app.command()
def observe(
    entity_id: Annotated[str, typer.Argument(metavar="ID")],
    text: Annotated[str, typer.Argument(help="The observation")],
    directory: DirOption = None,
) -> None:
    """Append an observation to an entity."""
    store = _open_store(directory)
    try:
        _print(store.add_observation(entity_id, text).to_json())
    except CortexError as exc:
        _fail(str(exc))


@app.command()
def connect(
    src: Annotated[str, typer.Argument(help="Source entity id")],
    rel: Annotated[str, typer.Argument(help="Predicate, e.g. uses")],
    dst: Annotated[str, typer.Argument(help="Target entity id")],
    context: Annotated[str, typer.Option("--context", "-c", help="Why or where this holds")] = "",
    directory: DirOption = None,
) -> None:
    """Record a relation between two existing entities."""
    store = _open_store(directory)
    try:
        _print(store.connect(src, rel, dst, context).to_json())
    except CortexError as exc:
        _fail(str(exc))


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for (typos tolerated)")],
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, max=100)] = 10,
    directory: DirOption = None,
) -> None:
    """Fuzzy search over names, descriptions, tags and observations."""
    store = _open_store(directory)
    with store.snapshot():
        results = []
        for hit in store.search(query, limit):
            summary = store.get(hit.entity_id).summary()
            summary.update(score=hit.score, matched=hit.matched)
            results.append(summary)
    _print({"query": query, "count": len(results), "results": results})


@app.command()
def report(
    stale_days: Annotated[int, typer.Option("--stale-days", min=1, help="Days without update = stale")] = 30,
    directory: DirOption = None,
) -> None:
    """Print the entropy report."""
    store = _open_store(directory)
    with store.snapshot():
        _print(build_entropy_report(store, stale_days=stale_days, now=utc_now()))


@app.command()
def show(
    entity_id: Annotated[str, typer.Argument(metavar="ID")],
    directory: DirOption = None,
) -> None:
    """Print one entity with its observations and relations."""
    store = _open_store(directory)
    try:
        with store.snapshot():
            view = store.get(entity_id).to_json()
            view["relations"] = [relation.to_json() for relation in store.relations_of(entity_id)]
    except CortexError as exc:
        _fail(str(exc))
    _print(view)


@app.command("import")
def import_(
    source: Annotated[Path, typer.Argument(help="A server-memory JSONL file (MEMORY_FILE_PATH)")],
    default_category: Annotated[
        str | None, typer.Option("--default-category", help="Category for unmapped entity types")
    ] = None,
    category_map: Annotated[
        list[str] | None,
        typer.Option("--map", help="entityType=category (repeatable), e.g. --map organization=projects"),
    ] = None,
    directory: DirOption = None,
    categories: CategoriesOption = None,
) -> None:
    """Import a server-memory knowledge graph; prints what was added and what could not be mapped."""
    mapping: dict[str, str] = {}
    for item in category_map or []:
        entity_type, separator, category = item.partition("=")
        if not separator or not entity_type.strip() or not category.strip():
            _fail(f"--map {item!r}: expected entityType=category")
        mapping[entity_type.strip()] = category.strip()
    store = _open_store(directory, categories)
    try:
        result = import_memory_file(store, source, default_category=default_category, category_map=mapping)
    except CortexError as exc:
        _fail(str(exc))
    _print(result.to_json())


@app.command()
def serve(
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    ] = False,
    sse: Annotated[
        bool,
        typer.Option(
            "--sse", help="Serve the SSE transport at http://HOST:PORT/sse (messages to /messages/)"
        ),
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on with --http or --sse")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8765,
    stale_days: Annotated[int, typer.Option("--stale-days", min=1)] = 30,
    directory: DirOption = None,
    categories: CategoriesOption = None,
) -> None:
    """Serve the knowledge folder over MCP (stdio by default, or --http, or --sse)."""
    if http and sse:
        typer.echo("error: choose one transport: --http or --sse", err=True)
        raise typer.Exit(code=2)
    from mcp_nexus.builtin.cortex.server import create_server  # the SDK is only needed here

    chosen = [c.strip() for c in categories.split(",")] if categories else None
    try:
        server = create_server(directory, chosen, stale_days)
    except (CortexError, OSError) as exc:
        _fail(str(exc))
    if http:
        server.run("streamable-http", host=host, port=port)
    elif sse:
        # The SDK's SSE app turns DNS-rebinding protection on for a loopback host.
        server.run("sse", host=host, port=port)
    else:
        server.run("stdio")
