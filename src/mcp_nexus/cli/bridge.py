"""`nexus bridge xiaozhi`: run the gateway with only the Xiaozhi bridge in front of it.

Endpoints come from `--endpoint`, the `MCP_ENDPOINT` variable (one URL, or several separated
by `;`, as the popular single-file bridge reads it) and the config's `xiaozhi.endpoints`.
Without `--config`, `NEXUS_CONFIG`, then `MCP_CONFIG`, then `./mcp_config.json` is used when
present, so a directory set up for that bridge works unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mcp_nexus.cli.options import check_port

if TYPE_CHECKING:
    from pydantic import ValidationError

    from mcp_nexus.config.schema import NexusConfig
    from mcp_nexus.config.xiaozhi import XiaozhiSettings

# The bridge, pydantic and the config are imported by the command that runs: `nexus bridge -h`
# and a usage error answer at once.
app = typer.Typer(
    help="Bridges from the gateway's tools to other networks.", no_args_is_help=True, rich_markup_mode=None
)


@app.callback()
def bridge() -> None:
    """Bridges from the gateway's tools to other networks."""


FOREIGN_CONFIG_ENV = "MCP_CONFIG"
FOREIGN_CONFIG_FILE = "mcp_config.json"


def config_path(given: Path | None, env: dict[str, str] | None = None) -> Path | None:
    """--config, else NEXUS_CONFIG, else MCP_CONFIG, else ./mcp_config.json if it exists, else none."""
    environ = os.environ if env is None else env
    if given is not None:
        return given
    for variable in ("NEXUS_CONFIG", FOREIGN_CONFIG_ENV):
        if environ.get(variable):
            return Path(environ[variable])
    local = Path(FOREIGN_CONFIG_FILE)
    return local if local.is_file() else None


def bridge_settings(
    config: NexusConfig, endpoints: list[str], envelope_port: int | None, envelope_token: str | None
) -> XiaozhiSettings:
    from mcp_nexus.config.xiaozhi import XiaozhiSettings, with_env_endpoints

    settings = with_env_endpoints(config.xiaozhi, extra=endpoints)
    if envelope_port is None:
        return settings
    data = settings.model_dump(exclude_unset=True)
    server = {**data.get("envelope_server", {}), "enabled": True, "port": envelope_port}
    if envelope_token:
        server["token"] = envelope_token
    data["envelope_server"] = server
    return XiaozhiSettings.model_validate(data)


async def run_bridge(config: NexusConfig, status_every: float) -> None:
    """Until SIGINT/SIGTERM: the gateway without HTTP, its bridge, and the links' status now and then."""
    import asyncio
    import contextlib
    import sys

    from mcp_nexus.frontends.xiaozhi.status import render_status
    from mcp_nexus.runtime import Runtime, RuntimeOptions

    # A bridge has no client waiting for it: its first tools/list should hold every tool.
    options = RuntimeOptions(http=False, bridge=True, watch=False, wait_ready=True, signals=True)
    async with Runtime(config, options) as runtime:
        bridge = runtime.bridge
        assert bridge is not None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(runtime.wait_for_stop(), status_every or None)
                break
            print(render_status(bridge.status()), file=sys.stderr, flush=True)
        print(render_status(bridge.status()), file=sys.stderr, flush=True)


def describe(error: ValidationError) -> str:
    """The problems without the values: pydantic's own text repeats the input, and URLs hold tokens."""
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc'])}: {item['msg'].removeprefix('Value error, ')}"
        for item in error.errors()
    )


@app.command("xiaozhi")
def xiaozhi(
    endpoint: Annotated[
        list[str] | None,
        typer.Option(
            "--endpoint",
            "-e",
            help="Endpoint URL, wss://.../mcp/?token=... (repeatable; also read from MCP_ENDPOINT).",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Config file (Nexus format or mcp_config.json)."),
    ] = None,
    envelope_port: Annotated[
        int | None,
        typer.Option(help="Also serve device-protocol (type: mcp) peers on this port.", callback=check_port),
    ] = None,
    envelope_token: Annotated[
        str | None,
        typer.Option(envvar="NEXUS_ENVELOPE_TOKEN", help="Bearer token envelope peers must send."),
    ] = None,
    status_every: Annotated[
        float, typer.Option(help="Print the links' status every N seconds (0: only on exit).", min=0)
    ] = 0.0,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also log debug messages.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only warnings and errors.")] = False,
) -> None:
    """Connect the gateway's tools to Xiaozhi endpoints (and device-protocol peers) until interrupted."""
    import asyncio

    from pydantic import ValidationError

    from mcp_nexus.cli.log_setup import setup_logging
    from mcp_nexus.config.errors import ConfigError
    from mcp_nexus.config.load import load_config

    if verbose and quiet:
        raise typer.BadParameter("--verbose and --quiet contradict each other", param_hint="'--quiet'")
    setup_logging(verbose=verbose, quiet=quiet)
    try:
        cfg, warnings = load_config(config_path(config))
        settings = bridge_settings(cfg, endpoint or [], envelope_port, envelope_token)
    except ConfigError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    except ValidationError as exc:  # a bad --endpoint or MCP_ENDPOINT
        typer.echo(f"bad Xiaozhi settings: {describe(exc)}", err=True)
        raise typer.Exit(2) from exc
    for warning in warnings:
        typer.echo(f"config warning: {warning}", err=True)
    if not (settings.endpoints or settings.envelope_server.enabled or settings.envelope_client.url):
        typer.echo(
            "no Xiaozhi endpoint: pass --endpoint URL, set MCP_ENDPOINT, or list xiaozhi.endpoints in the config",
            err=True,
        )
        raise typer.Exit(2)
    asyncio.run(run_bridge(cfg.model_copy(update={"xiaozhi": settings}), status_every))
