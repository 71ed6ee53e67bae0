"""The `nexus` command line: argument parsing and printing. Running a gateway is runtime.py's job.

`nexus --help` and `nexus version` start in a fraction of a second: this module imports typer and
little else at the top; each command imports what it needs (the gateway, pydantic, rich, asyncio)
in its body, and the command groups of other modules load when named (cli/lazy.py).
tests/cli/test_cli_start.py holds it to that.
"""

from __future__ import annotations

# First: a Ctrl-C while the imports below run ends `nexus` quietly (exit 130).
from mcp_nexus.cli import interrupt as cli_interrupt  # isort: split

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer

from mcp_nexus.cli import lazy_coercion as cli_lazy_coercion
from mcp_nexus.cli.lazy import LazyGroup, LazyGroupSpec
from mcp_nexus.cli.options import (
    HOST_HELP,
    PIPED_HELP,
    PORT_HELP,
    JsonOption,
    TokenOption,
    UrlOption,
    admin_request,
    check_host,
    check_port,
)

if TYPE_CHECKING:
    from rich.console import Console

    from mcp_nexus.config.schema import NexusConfig
    from mcp_nexus.config.watch import ConfigSource
    from mcp_nexus.runtime import Runtime, RuntimeOptions
    from mcp_nexus.upstream.upstream import Upstream


cli_lazy_coercion.install()


class NexusGroup(LazyGroup):
    LAZY: ClassVar[Mapping[str, LazyGroupSpec]] = {
        "cortex": LazyGroupSpec("mcp_nexus.builtin.cortex.cli:app", "The built-in cortex server."),
        "device": LazyGroupSpec("mcp_nexus.builtin.device.cli:app", "The built-in device server."),
        "cache": LazyGroupSpec("mcp_nexus.cli.cache:app", "The result cache of a running gateway."),
        "auth": LazyGroupSpec(
            "mcp_nexus.cli.auth:app", "OAuth logins of a running gateway to its upstream servers."
        ),
        "bridge": LazyGroupSpec(
            "mcp_nexus.cli.bridge:app", "Bridges from the gateway's tools to other networks."
        ),
        "task": LazyGroupSpec(
            "mcp_nexus.cli.task:app", "Goals carried out by the gateway's control plane (docs/CONTROL.md)."
        ),
        "index": LazyGroupSpec(
            "mcp_nexus.cli.index:app", "The tool index: saved snapshot of every server's tools."
        ),
        "audit": LazyGroupSpec(
            "mcp_nexus.cli.audit:app",
            "The audit log of tool calls and admin actions: verify its chain, tail it, export it.",
        ),
        "plugins": LazyGroupSpec(
            "mcp_nexus.cli.plugins:app",
            "Installed plugins: transports, pipeline steps and embedded servers, and where from.",
        ),
        "tools": LazyGroupSpec(
            "mcp_nexus.cli.tools:app",
            "The aggregated tools of a running gateway, and the ones held by tool integrity.",
        ),
    }


# Plain help (click's): typer's rich help costs a quarter of a second of imports on every --help.
HELP_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

app = typer.Typer(
    cls=NexusGroup,
    help="Nexus: many MCP servers behind one governed endpoint.",
    epilog="Ctrl-C ends any command at once, with exit status 130 (nexus serve: see its help).",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
)
config_app = typer.Typer(help="Inspect configuration files.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(config_app, name="config")


@cache
def _err() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)


@cache
def _out() -> Console:
    from rich.console import Console

    return Console()


ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Config file (JSON or YAML); default: built-in servers only."),
]
PrivateConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", "-c", help="Run a private gateway on this config file instead of asking the running one."
    ),
]
NameArgument = Annotated[str, typer.Argument(help="The server's name in the config.")]


def _version() -> str:
    from mcp_nexus import __version__

    return __version__


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(_version())
        raise typer.Exit()


@app.callback()
def _command(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the Nexus version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    cli_interrupt.command_started()


def _setup_logging(verbose: bool, quiet: bool = False) -> None:
    from mcp_nexus.cli.log_setup import setup_logging

    setup_logging(verbose=verbose, quiet=quiet)


def _load(path: Path | None) -> NexusConfig:
    from mcp_nexus.config.errors import ConfigError
    from mcp_nexus.config.load import load_config

    env_path = os.environ.get("NEXUS_CONFIG")
    chosen = path if path is not None else (Path(env_path) if env_path else None)
    try:
        config, warnings = load_config(chosen)
    except ConfigError as exc:
        _err().print(str(exc), style="red", highlight=False, markup=False)
        raise typer.Exit(2) from exc
    for warning in warnings:
        _err().print(f"config warning: {warning}", style="yellow", highlight=False, markup=False)
    return config


def _private_config(cfg: NexusConfig) -> NexusConfig:
    """A private gateway answers one command: it must not overwrite the serving gateway's saved tool index,
    and it reports each server's first start: a server that failed it is not restarted behind the
    report's back (under load a restart 0.1 s later showed CONNECTING where the start had failed)."""
    cfg.gateway.index.persist = False
    for server in cfg.servers.values():
        server.auto_restart = False
    return cfg


def _private_options() -> RuntimeOptions:
    """A private gateway for one command (`--config F`): no port, watcher or bridge; every server awaited."""
    from mcp_nexus.runtime import RuntimeOptions

    return RuntimeOptions(http=False, stdio=False, bridge=False, watch=False, wait_ready=True, tasks=False)


def _quiet() -> None:
    _setup_logging(False, quiet=True)


def _run(coroutine: Any) -> Any:
    from mcp_nexus import event_loop

    return event_loop.run(coroutine)


@app.command()
def version() -> None:
    """Print the Nexus version."""
    typer.echo(_version())


# -- serve ---------------------------------------------------------------------------------


@app.command()
def serve(
    config: ConfigOption = None,
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve MCP over stdin/stdout instead of HTTP.")
    ] = False,
    host: Annotated[str | None, typer.Option(help=HOST_HELP, callback=check_host)] = None,
    port: Annotated[int | None, typer.Option(help=PORT_HELP, callback=check_port)] = None,
    token: Annotated[
        str | None,
        typer.Option(envvar="NEXUS_TOKEN", help="Bearer token clients must send (required off loopback)."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also log debug messages.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only warnings and errors (no banner, no READY lines).")
    ] = False,
    watch: Annotated[
        bool, typer.Option("--watch/--no-watch", help="Apply config file changes while running.")
    ] = True,
    wait_ready: Annotated[
        bool,
        typer.Option("--wait-ready", help="Serve only once every server is READY or failed (for scripts)."),
    ] = False,
    profile: Annotated[
        str | None,
        typer.Option("--profile", help="With --stdio: the profile (config `profiles:`) the client gets."),
    ] = None,
) -> None:
    """Run the gateway. It serves at once; servers join as they become ready.

    SIGINT/SIGTERM: calls in flight finish within gateway.shutdown_grace, then exit 0; a second signal stops at
    once. SIGHUP: re-read the config file and apply it like `nexus reload` (with --stdio: stop like SIGTERM).

    Everything it prints goes to stderr (stdout is the protocol's with --stdio): the banner once serving
    starts, then log lines, one format, each server joining or failing among them.
    """
    if verbose and quiet:
        raise typer.BadParameter("--verbose and --quiet contradict each other", param_hint="'--quiet'")
    _setup_logging(verbose, quiet)
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
    if profile is not None:
        problem = _profile_problem(cfg, profile, stdio)
        if problem is not None:
            raise typer.BadParameter(problem, param_hint="'--profile'")
    if not stdio:
        from mcp_nexus.frontends.http.security import TokenRequiredError, check_bind

        try:
            check_bind(cfg.gateway.host, cfg.gateway.token, resource_server=cfg.gateway.auth is not None)
        except TokenRequiredError as exc:
            _err().print(str(exc), style="red", markup=False)
            raise typer.Exit(2) from exc
    from mcp_nexus.config.watch import ConfigSource
    from mcp_nexus.runtime import RuntimeOptions

    env_path = os.environ.get("NEXUS_CONFIG")
    chosen = config if config is not None else (Path(env_path) if env_path else None)
    source = ConfigSource(chosen, apply_overrides) if chosen is not None else None
    options = RuntimeOptions(
        http=not stdio, stdio=stdio, watch=watch, wait_ready=wait_ready, signals=True, stdio_profile=profile
    )
    raise typer.Exit(_run(_serve(cfg, options, source, banner=not quiet)))


def _profile_problem(cfg: NexusConfig, profile: str, stdio: bool) -> str | None:
    """Why `--profile` cannot be used as given (None: it can)."""
    if not stdio:
        return "--profile is for --stdio; over HTTP each profile is served at <path>/<profile>"
    if profile not in cfg.profiles:
        known = ", ".join(sorted(cfg.profiles)) or "none are configured"
        return f"no profile {profile!r} in the config (profiles: {known})"
    return None


async def _serve(
    cfg: NexusConfig, options: RuntimeOptions, source: ConfigSource | None, *, banner: bool
) -> int:
    from mcp_nexus.runtime import BindError, Runtime

    try:
        async with Runtime(cfg, options, source=source, on_progress=_report_progress) as runtime:
            if options.http and banner:
                _print_banner(runtime)
            await runtime.wait_for_stop()
    except BindError as exc:
        _err().print(f"cannot serve: {exc.strerror}", style="red", markup=False)
        return 2
    return 0


def _report_progress(upstream: Upstream) -> None:
    """One log line per server as it joins (or fails): the view of a start that never blocks serving."""
    import logging

    logger = logging.getLogger("mcp_nexus.serve")
    if upstream.is_ready:
        logger.info("server %s: READY, %d tools", upstream.name, len(upstream.tools))
    elif upstream.last_error:
        logger.warning("server %s: %s: %s", upstream.name, upstream.state, upstream.last_error)


def _print_banner(runtime: Runtime) -> None:
    from mcp_nexus import __version__
    from mcp_nexus.paths import data_dir

    err = _err()
    gateway = runtime.gateway
    url = runtime.url
    starting = [u.name for u in gateway.upstreams.values() if u.connecting]
    ready = sum(1 for u in gateway.upstreams.values() if u.is_ready)
    err.print(
        f"[green]Nexus {__version__}[/green] serving {len(gateway.catalog.tool_list)} tools "
        f"from {ready}/{len(gateway.upstreams)} servers at [bold]{url}[/bold]",
        highlight=False,
    )
    if starting:
        err.print(f"  still starting: {', '.join(starting)} (their tools join when ready)", markup=False)
    err.print(f"  data folder: {data_dir()}", markup=False, highlight=False)
    if runtime.port is not None:
        dashboard = url.removesuffix(gateway.config.gateway.path) + "/"
        login = " (log in with the gateway's token)" if gateway.config.gateway.token is not None else ""
        err.print(
            f"  dashboard: {dashboard}{login}   metrics: {dashboard}metrics", markup=False, highlight=False
        )
    entry: dict[str, Any] = {"type": "http", "url": url}
    if gateway.config.gateway.token is not None:
        entry["headers"] = {"Authorization": "Bearer <your token>"}
    err.print("Point a desktop MCP client at it with:", highlight=False)
    err.print(json.dumps({"mcpServers": {"nexus": entry}}, indent=2), highlight=False, markup=False)
    err.print(
        f"Or try it with the Inspector: npx @modelcontextprotocol/inspector --cli {url} "
        "--transport http --method tools/list",
        highlight=False,
        markup=False,
    )


# -- tools and calls ---------------------------------------------------------------------------


def tools(  # `nexus tools` with no subcommand (cli/tools.py)
    config: PrivateConfigOption = None,
    url: UrlOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the aggregated tools of the running gateway (or, with --config, of a private one)."""
    from mcp_nexus.cli.table import Column, Listing, first_line, print_json, print_listing

    if config is None:
        rows = admin_request("GET", url, "/api/tools", token)["tools"]
    else:
        _quiet()
        rows = _run(_private_tools(_load(config)))
    if as_json:
        print_json(rows)
        return
    listing = Listing(
        (
            Column("tool", key=True),
            Column("server", key=True),
            Column("fallbacks"),
            Column("description", one_line=True),
        ),
        f"{len(rows)} tools",
    )
    for row in rows:
        listing.add(
            row["name"], row["server"], ", ".join(row["fallbacks"]), first_line(row.get("description"))
        )
    print_listing(listing, _out())


async def _private_tools(cfg: NexusConfig) -> list[dict[str, Any]]:
    from mcp_nexus.frontends.admin.api import tool_rows
    from mcp_nexus.runtime import Runtime

    async with Runtime(_private_config(cfg), _private_options()) as runtime:
        return tool_rows(runtime.gateway)


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
    config: PrivateConfigOption = None,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Call one tool through the running gateway's pipeline (or a private one) and print the result as JSON."""
    from mcp_nexus.cli.admin_client import AdminClient, AdminError, default_url

    arguments = _parse_args(arg or [], raw_json)
    if config is None:
        try:
            result = AdminClient(url or default_url(), token).post(
                f"/api/tools/{tool}/call", {"arguments": arguments}
            )
        except AdminError as exc:
            body = exc.body if isinstance(exc.body, dict) else {}
            code = f"error {body['code']}: " if "code" in body else ""
            _err().print(f"{code}{body.get('error', exc)}", style="red", highlight=False, markup=False)
            raise typer.Exit(1) from exc
    else:
        from mcp_nexus.errors import GatewayError

        _quiet()
        try:
            result = _run(_private_call(_load(config), tool, arguments))
        except GatewayError as exc:
            _err().print(f"error {exc.code}: {exc.message}", style="red", highlight=False, markup=False)
            raise typer.Exit(1) from exc
    print(json.dumps(result, indent=2, ensure_ascii=False))
    raise typer.Exit(1 if result.get("isError") else 0)


async def _private_call(cfg: NexusConfig, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from mcp_nexus.pipeline.call import Caller
    from mcp_nexus.runtime import Runtime

    async with Runtime(_private_config(cfg), _private_options()) as runtime:
        result = await runtime.gateway.call_tool_result(tool, arguments, caller=Caller("cli"))
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


# -- servers of the running gateway -----------------------------------------------------------------


def _uptime(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else (f"{minutes}m{secs:02d}s" if minutes else f"{secs}s")


def _print_servers(rows: list[dict[str, Any]], history: bool) -> None:
    import time

    from mcp_nexus.cli.table import Column, Listing, print_listing

    out = _out()
    listing = Listing(
        (
            Column("server", key=True),
            Column("transport"),
            Column("state", key=True),
            Column("priority", justify="right"),
            Column("tools", justify="right"),
            Column("uptime", justify="right"),
            Column("restarts", justify="right"),
            Column("error"),
        ),
        "servers",
    )
    for row in rows:
        listing.add(
            row["name"],
            row["transport"],
            row["state"],
            str(row["priority"]),
            str(row["tools"]),
            _uptime(row.get("uptime")),
            str(row.get("restarts", 0)),
            row.get("last_error") or "",
        )
    print_listing(listing, out, section=history)
    if history:
        changes = Listing(
            (Column("server", key=True), Column("time"), Column("from"), Column("to"), Column("reason")),
            "state changes",
        )
        for row in rows:
            for change in row.get("history", []):
                when = time.strftime("%H:%M:%S", time.localtime(change["timestamp"]))
                changes.add(row["name"], when, change["from"], change["to"], change["reason"])
        print_listing(changes, out, section=True)


@app.command(epilog=PIPED_HELP)
def servers(
    config: PrivateConfigOption = None,
    url: UrlOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
    history: Annotated[
        bool, typer.Option("--history", help="Also print each server's state changes.")
    ] = False,
) -> None:
    """Show each server's state, tools, uptime, restarts and last error.

    Asks the running gateway. With --config, starts the servers of that file here instead
    (no gateway needed), shows them and stops them.
    """
    from mcp_nexus.cli.table import print_json, print_note

    out = _out()
    frontends: dict[str, Any] = {}
    if config is None:
        answer = admin_request("GET", url, "/api/servers", token)
        rows, frontends = answer["servers"], answer.get("frontends", {})
    else:
        _quiet()
        rows = _run(_private_servers(_load(config)))
    # A private gateway started these servers just now: one in ERROR will not start (exit 1).
    failed = config is not None and any(row["state"] == "ERROR" for row in rows)
    if as_json:
        print_json({"servers": rows, "frontends": frontends} if frontends else rows)
        raise typer.Exit(1 if failed else 0)
    _print_servers(rows, history)
    if "http" in frontends:
        http = frontends["http"]
        print_note(
            f"http: {http['sessions']} handshake-era sessions open (idle timeout {http['session_idle_timeout']:g} s, "
            f"at most {http['session_max']})",
            out,
        )
    if "xiaozhi" in frontends:
        from mcp_nexus.frontends.xiaozhi import render_status

        print_note(render_status(frontends["xiaozhi"]), out)
    if failed:
        raise typer.Exit(1)


async def _private_servers(cfg: NexusConfig) -> list[dict[str, Any]]:
    from mcp_nexus.frontends.admin.api import server_status
    from mcp_nexus.runtime import Runtime

    async with Runtime(_private_config(cfg), _private_options()) as runtime:
        return [server_status(s) for s in runtime.gateway.supervisors.values()]


def _server_action(action: str, name: str, url: str | None, token: str | None) -> None:
    from mcp_nexus.cli.options import server_request
    from mcp_nexus.cli.table import print_line

    answer = server_request(action, name, url, token)
    error = f": {answer['last_error']}" if answer.get("last_error") else ""
    print_line(f"{answer['name']}: {answer['state']}{error}", _out())
    if answer["state"] == "ERROR" and action in ("start", "restart", "enable"):
        raise typer.Exit(1)


@app.command()
def start(name: NameArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Start one server of the running gateway."""
    _server_action("start", name, url, token)


@app.command()
def stop(name: NameArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Stop one server of the running gateway (it stays stopped: no automatic restart)."""
    _server_action("stop", name, url, token)


@app.command()
def restart(name: NameArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Restart (stdio) or reconnect (http, sse) one server of the running gateway."""
    _server_action("restart", name, url, token)


@app.command()
def reload(url: UrlOption = None, token: TokenOption = None) -> None:
    """Make the running gateway re-read its config file and apply what changed."""
    from mcp_nexus.cli.table import print_line

    answer = admin_request("POST", url, "/api/reload", token)
    print_line(f"reloaded: {answer['summary']}", _out())
    if answer.get("needs_process_restart"):
        _err().print(
            f"{', '.join(answer['needs_process_restart'])} changed: that takes a restart of nexus serve",
            style="yellow",
            markup=False,
        )


@app.command(epilog=PIPED_HELP + " Each table follows a '# title' line.")
def stats(
    url: UrlOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
    watch: Annotated[
        float | None,
        typer.Option("--watch", "-w", help="Redraw every N seconds until Ctrl-C (e.g. --watch 2).", min=0.05),
    ] = None,
) -> None:
    """Show the running gateway's metrics: calls, errors, latency percentiles, cache, limits, upstreams."""
    from mcp_nexus.cli.stats_view import print_stats, watch_stats
    from mcp_nexus.cli.table import print_json

    answer = admin_request("GET", url, "/api/metrics", token)
    if as_json:
        print_json(answer)
        return
    if watch is None:
        print_stats(answer, _out())
        return
    watch_stats(answer, lambda: admin_request("GET", url, "/api/metrics", token), watch, _out())


@app.command("import")
def import_configs(
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="The Nexus config to write (JSON; YAML if it ends in .yaml)."),
    ] = Path("nexus.json"),
    sources: Annotated[
        list[Path] | None,
        typer.Option("--from", help="Read these files (repeatable) instead of every known client location."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the output file if it exists.")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the config instead of writing it (the report on stderr).")
    ] = False,
) -> None:
    """Write one Nexus config from the MCP servers your clients already have.

    Reads Claude Desktop, Claude Code (~/.claude.json, .mcp.json), Cursor, VS Code and Windsurf
    configs in their usual places, and reports what it took, from where, and what it skipped and why.
    Exit status: 0 written; 1 no server found; 2 the output exists (without --force) or a --from file is unreadable.
    """
    from mcp_nexus.config.import_command import import_command

    raise typer.Exit(import_command(output=output, sources=sources, force=force, dry_run=dry_run))


@config_app.command("check")
def config_check(
    path: Annotated[Path, typer.Argument(help="The config file to validate.")],
    full: Annotated[
        bool, typer.Option("--full", help="Print the whole effective document (every default) as JSON.")
    ] = False,
    as_json: JsonOption = False,
    show_secrets: Annotated[bool, typer.Option("--show-secrets", help="Print secrets in clear.")] = False,
) -> None:
    """Validate a config file: a verdict, its servers (command found or not, URL) and what differs from the defaults.

    Exit status: 0 fine; 1 problems a server would trip on at start (a command not found); 2 invalid.
    """
    from mcp_nexus.cli.config_check import check_command

    raise typer.Exit(check_command(path, show_secrets=show_secrets, full=full, as_json=as_json))
