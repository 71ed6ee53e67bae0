"""The `nexus` command line."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from mcp_nexus import __version__
from mcp_nexus.builtin.cortex.cli import app as cortex_app
from mcp_nexus.builtin.device.cli import app as device_app
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.errors import GatewayError
from mcp_nexus.upstream.upstream import Upstream

app = typer.Typer(help="Nexus: many MCP servers behind one governed endpoint.", no_args_is_help=True)
config_app = typer.Typer(help="Inspect configuration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(cortex_app, name="cortex")
app.add_typer(device_app, name="device")

err = Console(stderr=True)
out = Console()

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Config file (JSON or YAML); default: built-in servers only."),
]


def _setup_logging(verbose: bool) -> None:
    # Always stderr: in stdio mode stdout belongs to the MCP protocol.
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("httpx2", "httpx", "mcp", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _load(path: Path | None) -> NexusConfig:
    env_path = os.environ.get("NEXUS_CONFIG")
    chosen = path if path is not None else (Path(env_path) if env_path else None)
    try:
        config, warnings = load_config(chosen)
    except ConfigError as exc:
        err.print(f"[red]{exc}[/red]", highlight=False)
        raise typer.Exit(2) from exc
    for warning in warnings:
        err.print(f"[yellow]config warning: {warning}[/yellow]", highlight=False)
    return config


async def _start_with_progress(gateway: Gateway) -> None:
    total = len(gateway.upstreams)
    with Progress(
        TextColumn("starting servers"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} {task.description}"),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=total)

        def advance(upstream: Upstream) -> None:
            progress.update(task, advance=1, description=f"{upstream.name}: {upstream.state}")

        await gateway.start(on_progress=advance)
    for upstream in gateway.upstreams.values():
        if upstream.last_error:
            err.print(f"[yellow]server {upstream.name}: {upstream.state}: {upstream.last_error}[/yellow]")


@app.command()
def version() -> None:
    """Print the Nexus version."""
    out.print(__version__)


@app.command()
def serve(
    config: ConfigOption = None,
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve MCP over stdin/stdout instead of HTTP.")
    ] = False,
    host: Annotated[str | None, typer.Option(help="Address to listen on (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8787).")] = None,
    token: Annotated[
        str | None,
        typer.Option(envvar="NEXUS_TOKEN", help="Bearer token clients must send (required off loopback)."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run the gateway."""
    _setup_logging(verbose)
    cfg = _load(config)
    settings = cfg.gateway
    if host is not None:
        settings.host = host
    if port is not None:
        settings.port = port
    if token:
        settings.token = token
    gateway = Gateway(cfg)
    if stdio:
        from mcp_nexus.frontends.stdio import serve_stdio

        async def run_stdio() -> None:
            await _start_with_progress(gateway)
            try:
                await serve_stdio(gateway)
            finally:
                await gateway.stop()

        asyncio.run(run_stdio())
        return

    from mcp_nexus.frontends.security import TokenRequiredError, check_bind

    try:
        check_bind(settings.host, settings.token)
    except TokenRequiredError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    _serve_http(gateway)


def _serve_http(gateway: Gateway) -> None:
    import uvicorn

    from mcp_nexus.frontends.http_app import build_http_app

    settings = gateway.config.gateway
    app_, _frontend = build_http_app(gateway, manage_gateway=False)

    async def run() -> None:
        await _start_with_progress(gateway)
        server = uvicorn.Server(
            uvicorn.Config(app_, host=settings.host, port=settings.port, log_level="warning", lifespan="on")
        )
        shown_host = f"[{settings.host}]" if ":" in settings.host else settings.host
        url = f"http://{shown_host}:{settings.port}{settings.path}"
        ready = sum(1 for u in gateway.upstreams.values() if u.is_ready)
        err.print(
            f"[green]Nexus {__version__}[/green] serving {len(gateway.catalog.tool_list)} tools "
            f"from {ready}/{len(gateway.upstreams)} servers at [bold]{url}[/bold]"
        )
        _print_client_help(url, settings.token is not None)
        try:
            await server.serve()
        finally:
            await gateway.stop()

    asyncio.run(run())


def _print_client_help(url: str, with_token: bool) -> None:
    entry: dict[str, Any] = {"type": "http", "url": url}
    if with_token:
        entry["headers"] = {"Authorization": "Bearer <your token>"}
    snippet = json.dumps({"mcpServers": {"nexus": entry}}, indent=2)
    err.print("Point a desktop MCP client at it with:", highlight=False)
    err.print(snippet, highlight=False, markup=False)
    err.print(
        f"Or try it with the Inspector: npx @modelcontextprotocol/inspector --cli {url} "
        "--transport http --method tools/list",
        highlight=False,
        markup=False,
    )


@app.command()
def tools(config: ConfigOption = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """List the aggregated tools with their server, state and description."""
    _setup_logging(False)
    logging.getLogger().setLevel(logging.WARNING)
    cfg = _load(config)

    async def run() -> None:
        gateway = Gateway(cfg)
        await _start_with_progress(gateway)
        try:
            rows: list[tuple[str, str, str, list[str], str]] = []
            for name, entry in gateway.catalog.tools.items():
                if entry.local is not None:  # the gateway's own tools, e.g. python_sandbox
                    rows.append((name, "nexus", "READY", [], entry.tool.description or ""))
                    continue
                top = entry.candidates[0].upstream
                fallbacks = [c.upstream.name for c in entry.candidates[1:]]
                rows.append((name, top.name, str(top.state), fallbacks, entry.tool.description or ""))
            if as_json:
                print(
                    json.dumps(
                        [
                            {
                                "name": r[0],
                                "server": r[1],
                                "state": r[2],
                                "fallbacks": r[3],
                                "description": r[4],
                            }
                            for r in rows
                        ],
                        indent=2,
                    )
                )
                return
            table = Table(title=f"{len(rows)} tools")
            for column in ("tool", "server", "state", "fallbacks", "description"):
                table.add_column(column, overflow="fold")
            for name, server, state, fallbacks, description in rows:
                table.add_row(name, server, state, ", ".join(fallbacks), description.split("\n")[0][:80])
            out.print(table)
        finally:
            await gateway.stop()

    asyncio.run(run())


@app.command()
def servers(config: ConfigOption = None) -> None:
    """Start the configured servers and show the state of each."""
    _setup_logging(False)
    logging.getLogger().setLevel(logging.WARNING)
    cfg = _load(config)

    async def run() -> None:
        gateway = Gateway(cfg)
        await _start_with_progress(gateway)
        try:
            table = Table(title="servers")
            for column in (
                "server",
                "transport",
                "state",
                "priority",
                "namespace",
                "tools",
                "protocol",
                "error",
            ):
                table.add_column(column, overflow="fold")
            for name, upstream in gateway.upstreams.items():
                c = upstream.config
                table.add_row(
                    name,
                    c.transport,
                    str(upstream.state),
                    str(c.effective_priority),
                    c.effective_namespace or "(bare)",
                    str(len(upstream.tools)),
                    upstream.protocol_version or "-",
                    upstream.last_error or "",
                )
            out.print(table)
        finally:
            await gateway.stop()

    asyncio.run(run())


def _parse_args(pairs: list[str], raw_json: str | None) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    if raw_json:
        try:
            parsed = json.loads(raw_json)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"--json is not valid JSON: {exc.msg}") from exc
        if not isinstance(parsed, dict):
            raise typer.BadParameter("--json must be a JSON object of arguments")
        arguments.update(parsed)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--arg expects key=value, got {pair!r}")
        try:
            arguments[key] = json.loads(value)  # numbers, booleans, lists; plain text stays text
        except json.JSONDecodeError:
            arguments[key] = value
    return arguments


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="Exposed tool name, e.g. time.get_current_time")],
    arg: Annotated[
        list[str] | None, typer.Option("--arg", "-a", help="key=value (value parsed as JSON if it can be)")
    ] = None,
    raw_json: Annotated[str | None, typer.Option("--json", help="All arguments as one JSON object")] = None,
    config: ConfigOption = None,
) -> None:
    """Call one tool through the gateway's pipeline and print the result as JSON."""
    _setup_logging(False)
    logging.getLogger().setLevel(logging.WARNING)
    arguments = _parse_args(arg or [], raw_json)
    cfg = _load(config)

    async def run() -> int:
        gateway = Gateway(cfg)
        await gateway.start()
        try:
            result = await gateway.call_tool_result(tool, arguments, caller=Caller("cli"))
        except GatewayError as exc:
            err.print(f"[red]error {exc.code}: {exc.message}[/red]", highlight=False)
            return 1
        finally:
            await gateway.stop()
        print(
            json.dumps(
                result.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, ensure_ascii=False
            )
        )
        return 1 if result.is_error else 0

    raise typer.Exit(asyncio.run(run()))


@config_app.command("check")
def config_check(path: Annotated[Path, typer.Argument(help="The config file to validate.")]) -> None:
    """Validate a config file and print the normalised result (secrets masked), or the errors."""
    try:
        cfg, warnings = load_config(path)
    except ConfigError as exc:
        err.print(f"[red]{exc}[/red]", highlight=False)
        raise typer.Exit(2) from exc
    for warning in warnings:
        err.print(f"[yellow]warning: {warning}[/yellow]", highlight=False)
    print(json.dumps(_masked(cfg.model_dump(mode="json")), indent=2))


_SECRET_KEYS = ("token", "api_key", "authorization", "password", "secret")


def _masked(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _masked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, key) for v in value]
    if isinstance(value, str) and value and any(s in key.lower() for s in _SECRET_KEYS):
        return "***"
    return value
