"""The `nexus` command line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from mcp_nexus import __version__
from mcp_nexus.builtin.cortex.cli import app as cortex_app
from mcp_nexus.builtin.device.cli import app as device_app
from mcp_nexus.cache_cli import app as cache_app
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import load_config
from mcp_nexus.config.schema import NexusConfig
from mcp_nexus.config.watch import ConfigSource, ConfigWatcher
from mcp_nexus.frontends.xiaozhi.cli import app as bridge_app
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.errors import GatewayError
from mcp_nexus.upstream.upstream import Upstream

app = typer.Typer(help="Nexus: many MCP servers behind one governed endpoint.", no_args_is_help=True)
config_app = typer.Typer(help="Inspect configuration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(cortex_app, name="cortex")
app.add_typer(device_app, name="device")
app.add_typer(cache_app, name="cache")
app.add_typer(bridge_app, name="bridge")

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
    watch: Annotated[
        bool, typer.Option("--watch/--no-watch", help="Apply config file changes while running.")
    ] = True,
) -> None:
    """Run the gateway (SIGINT/SIGTERM: in-flight calls finish within gateway.shutdown_grace, then exit 0)."""
    _setup_logging(verbose)
    cfg = _load(config)

    def apply_overrides(loaded: NexusConfig) -> None:
        # The command line wins over the file, at start and at every reload.
        if host is not None:
            loaded.gateway.host = host
        if port is not None:
            loaded.gateway.port = port
        if token:
            loaded.gateway.token = token

    apply_overrides(cfg)
    settings = cfg.gateway
    gateway = Gateway(cfg)
    source = _config_source(config, apply_overrides)
    gateway.config_source = source
    if stdio:
        asyncio.run(_serve_stdio(gateway, source if watch else None))
        return

    from mcp_nexus.frontends.security import TokenRequiredError, check_bind

    try:
        check_bind(settings.host, settings.token)
    except TokenRequiredError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from exc
    _serve_http(gateway, source if watch else None)


def _config_source(path: Path | None, adjust: Any) -> ConfigSource | None:
    env_path = os.environ.get("NEXUS_CONFIG")
    chosen = path if path is not None else (Path(env_path) if env_path else None)
    return ConfigSource(chosen, adjust) if chosen is not None else None


_BACKGROUND: set[asyncio.Future[Any]] = set()


def _keep(task: asyncio.Future[Any]) -> None:
    """Hold a reference to a fire-and-forget task until it is done (the loop keeps only weak ones)."""
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


@contextlib.asynccontextmanager
async def _bridging(gateway: Gateway) -> AsyncIterator[None]:
    """Run the Xiaozhi bridge beside the gateway when endpoints are configured (or in MCP_ENDPOINT)."""
    from mcp_nexus.config.xiaozhi import with_env_endpoints
    from mcp_nexus.frontends.xiaozhi import XiaozhiBridge

    bridge = XiaozhiBridge(gateway, with_env_endpoints(gateway.config.xiaozhi))
    if not bridge.configured:
        yield
        return
    await bridge.start()
    gateway.status_providers["xiaozhi"] = bridge.status
    try:
        yield
    finally:
        gateway.status_providers.pop("xiaozhi", None)
        await bridge.stop()


@contextlib.asynccontextmanager
async def _watching(gateway: Gateway, source: ConfigSource | None) -> AsyncIterator[None]:
    watcher = ConfigWatcher(source, gateway) if source is not None else None
    if watcher is not None:
        watcher.start()
    try:
        yield
    finally:
        if watcher is not None:
            await watcher.stop()


async def _serve_stdio(gateway: Gateway, source: ConfigSource | None) -> None:
    from mcp_nexus.frontends.stdio import serve_stdio

    await _start_with_progress(gateway)
    loop = asyncio.get_running_loop()
    serving = asyncio.ensure_future(serve_stdio(gateway))

    async def drain_then_stop() -> None:
        await gateway.drain()
        serving.cancel()

    def on_signal() -> None:
        if gateway.draining:
            serving.cancel()  # a second signal: stop waiting for calls in flight
            return
        err.print("shutting down: letting calls in flight finish")
        _keep(asyncio.ensure_future(drain_then_stop()))

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        async with _watching(gateway, source), _bridging(gateway):
            with contextlib.suppress(asyncio.CancelledError):
                await serving
    finally:
        await gateway.stop()


def _serve_http(gateway: Gateway, source: ConfigSource | None) -> None:
    import uvicorn

    from mcp_nexus.frontends.http_app import build_http_app

    settings = gateway.config.gateway
    app_, _frontend = build_http_app(gateway, manage_gateway=False)

    class GracefulServer(uvicorn.Server):
        """On SIGINT/SIGTERM: refuse new calls, let those in flight finish (up to the grace), then exit 0."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            # Not uvicorn's own handler: it re-raises the signal after shutting down, which
            # would end the process with the signal's status instead of 0.
            if gateway.draining:
                self.should_exit = self.force_exit = True  # a second signal: do not wait any more
                return
            loop.call_soon_threadsafe(lambda: _keep(asyncio.ensure_future(drain_then_exit())))

    async def drain_then_exit() -> None:
        err.print("shutting down: letting calls in flight finish")
        await gateway.drain()
        server.should_exit = True

    loop: asyncio.AbstractEventLoop
    server: uvicorn.Server

    async def run() -> None:
        nonlocal loop, server
        loop = asyncio.get_running_loop()
        await _start_with_progress(gateway)
        server = GracefulServer(
            uvicorn.Config(
                app_,
                host=settings.host,
                port=settings.port,
                log_level="warning",
                lifespan="on",
                # Streams still open after the drain (idle SSE listeners) are closed after this.
                timeout_graceful_shutdown=1,
            )
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
            async with _watching(gateway, source), _bridging(gateway):
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


UrlOption = Annotated[str, typer.Option("--url", help="Base URL of the running gateway.")]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="NEXUS_TOKEN", help="Bearer token (default: $NEXUS_TOKEN).")
]
DEFAULT_URL = "http://127.0.0.1:8787"


def _api(method: str, url: str, path: str, token: str | None, body: dict[str, Any] | None = None) -> Any:
    """One admin API request; errors end the command with a message that says what to do."""
    import httpx2

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    target = url.rstrip("/") + path
    try:
        response = httpx2.request(method, target, json=body, headers=headers, timeout=120)
    except httpx2.HTTPError as exc:
        err.print(
            f"[red]no gateway answers at {url} ({exc}); start one with `nexus serve`, or pass --url[/red]",
            highlight=False,
        )
        raise typer.Exit(1) from exc
    if response.status_code == 401:
        err.print("[red]the gateway wants a token: pass --token or set NEXUS_TOKEN[/red]")
        raise typer.Exit(1)
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": response.text[:500]}
    if response.status_code != 200:
        err.print(f"[red]error {response.status_code}: {answer.get('error', answer)}[/red]", highlight=False)
        raise typer.Exit(1)
    return answer


def _uptime(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else (f"{minutes}m{secs:02d}s" if minutes else f"{secs}s")


def _print_servers(rows: list[dict[str, Any]], history: bool) -> None:
    table = Table(title="servers")
    for column in ("server", "transport", "state", "priority", "tools", "uptime", "restarts", "error"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            row["name"],
            row["transport"],
            row["state"],
            str(row["priority"]),
            str(row["tools"]),
            _uptime(row.get("uptime")),
            str(row.get("restarts", 0)),
            row.get("last_error") or "",
        )
    out.print(table)
    if history:
        for row in rows:
            out.print(f"[bold]{row['name']}[/bold]")
            for change in row.get("history", []):
                when = time.strftime("%H:%M:%S", time.localtime(change["timestamp"]))
                out.print(f"  {when} {change['from']} -> {change['to']}: {change['reason']}", highlight=False)


@app.command()
def servers(
    config: ConfigOption = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the API's JSON.")] = False,
    history: Annotated[
        bool, typer.Option("--history", help="Also print each server's state changes.")
    ] = False,
) -> None:
    """Show each server's state, tools, uptime, restarts and last error.

    Asks the running gateway at --url. With --config, starts the servers of that file here
    instead (no gateway needed), shows them and stops them.
    """
    frontends: dict[str, Any] = {}
    if config is None:
        answer = _api("GET", url, "/api/servers", token)
        rows, frontends = answer["servers"], answer.get("frontends", {})
    else:
        _setup_logging(False)
        logging.getLogger().setLevel(logging.WARNING)
        rows = asyncio.run(_local_servers(_load(config)))
    if as_json:
        print(json.dumps({"servers": rows, "frontends": frontends} if frontends else rows, indent=2))
        return
    _print_servers(rows, history)
    if "xiaozhi" in frontends:
        from mcp_nexus.frontends.xiaozhi import render_status

        out.print(render_status(frontends["xiaozhi"]), highlight=False, markup=False)


async def _local_servers(cfg: NexusConfig) -> list[dict[str, Any]]:
    from mcp_nexus.frontends.admin_api import server_status

    gateway = Gateway(cfg)
    await _start_with_progress(gateway)
    try:
        return [server_status(s) for s in gateway.supervisors.values()]
    finally:
        await gateway.stop()


def _server_action(action: str, name: str, url: str, token: str | None) -> None:
    answer = _api("POST", url, f"/api/servers/{name}/{action}", token)
    error = f": {answer['last_error']}" if answer.get("last_error") else ""
    out.print(f"{answer['name']}: {answer['state']}{error}", highlight=False)
    if answer["state"] == "ERROR" and action in ("start", "restart", "enable"):
        raise typer.Exit(1)


NameArgument = Annotated[str, typer.Argument(help="The server's name in the config.")]


@app.command()
def start(name: NameArgument, url: UrlOption = DEFAULT_URL, token: TokenOption = None) -> None:
    """Start one server of the running gateway."""
    _server_action("start", name, url, token)


@app.command()
def stop(name: NameArgument, url: UrlOption = DEFAULT_URL, token: TokenOption = None) -> None:
    """Stop one server of the running gateway (it stays stopped: no automatic restart)."""
    _server_action("stop", name, url, token)


@app.command()
def restart(name: NameArgument, url: UrlOption = DEFAULT_URL, token: TokenOption = None) -> None:
    """Restart (stdio) or reconnect (http, sse) one server of the running gateway."""
    _server_action("restart", name, url, token)


@app.command()
def reload(url: UrlOption = DEFAULT_URL, token: TokenOption = None) -> None:
    """Make the running gateway re-read its config file and apply what changed."""
    answer = _api("POST", url, "/api/reload", token)
    out.print(f"reloaded: {answer['summary']}", highlight=False)
    if answer.get("needs_process_restart"):
        err.print(
            f"[yellow]{', '.join(answer['needs_process_restart'])} changed: "
            "that takes a restart of nexus serve[/yellow]"
        )


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
def config_check(
    path: Annotated[Path, typer.Argument(help="The config file to validate.")],
    show_secrets: Annotated[bool, typer.Option("--show-secrets", help="Print secrets in clear.")] = False,
) -> None:
    """Validate a config file and print the effective config (secrets masked), or the errors."""
    from mcp_nexus.config.check import check_command

    raise typer.Exit(check_command(path, show_secrets=show_secrets))
