"""`nexus tools`: the aggregated tools of a running gateway, and the ones tool integrity holds.

nexus tools                      list the tools (as before: cli.tools)
nexus tools pending              held and flagged tools: what changed, what the scan found
nexus tools diff SERVER.TOOL     the pinned definition against the current one
nexus tools approve SERVER.TOOL  pin the current definition: listed and callable again
nexus tools approve --all        every held tool
"""

from __future__ import annotations

import difflib
import json
from typing import Annotated, Any

import typer
from typer._click.core import Context  # typer's own click: its UsageError is printed as a usage error
from typer._click.exceptions import UsageError
from typer.core import TyperGroup

from mcp_nexus.cli.app import PrivateConfigOption
from mcp_nexus.cli.options import PIPED_HELP, JsonOption, TokenOption, UrlOption, admin_request

SUMMARY = "The aggregated tools of a running gateway, and the ones held by tool integrity."


class _ToolsGroup(TyperGroup):
    """`nexus tools --json true` is a value given to a flag, as it was before `tools` had subcommands."""

    def resolve_command(self, ctx: Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            known = ", ".join(self.list_commands(ctx))
            raise UsageError(f"Got unexpected extra argument ({name}); subcommands: {known}", ctx)
        return super().resolve_command(ctx, args)


app = typer.Typer(help=SUMMARY, cls=_ToolsGroup, invoke_without_command=True, no_args_is_help=False)


@app.callback(epilog=PIPED_HELP)
def _tools(
    ctx: typer.Context,
    config: PrivateConfigOption = None,
    url: UrlOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the aggregated tools of the running gateway (or, with --config, of a private one)."""
    if ctx.invoked_subcommand is None:
        from mcp_nexus.cli.app import tools as list_tools

        list_tools(config=config, url=url, token=token, as_json=as_json)


@app.command(epilog=PIPED_HELP)
def pending(url: UrlOption = None, token: TokenOption = None, as_json: JsonOption = False) -> None:
    """Tools held (quarantined) or flagged: what changed since they were approved, what the scan found."""
    from mcp_nexus.cli.table import print_json

    answer = admin_request("GET", url, "/api/integrity", token, timeout=10)
    if as_json:
        print_json(answer)
        return
    holds = answer["pending"]
    if not holds:
        typer.echo(f"no tool is held or flagged ({answer['pins']} definitions pinned in {answer['path']})")
        return
    for hold in holds:
        verdict = "QUARANTINED" if hold["quarantined"] else "flagged (warn: still listed)"
        typer.echo(f"{hold['server']}.{hold['tool']}  {verdict}: {hold['what']}")
        for finding in hold["findings"]:
            typer.echo(f"    {finding['kind']} in {finding['where']}: {finding['excerpt']}")
    held = sum(1 for hold in holds if hold["quarantined"])
    typer.echo(f"{held} held; approve with: nexus tools approve SERVER.TOOL (or --all)")


def _hold(url: str | None, token: str | None, name: str) -> dict[str, Any]:
    for hold in admin_request("GET", url, "/api/integrity", token, timeout=10)["pending"]:
        if name in (f"{hold['server']}.{hold['tool']}", hold["exposed"]):
            return dict(hold)
    typer.echo(f"{name} is not held or flagged (nexus tools pending lists those that are)", err=True)
    raise typer.Exit(1)


def _lines(definition: dict[str, Any] | None) -> list[str]:
    if definition is None:
        return []
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


@app.command()
def diff(
    name: Annotated[str, typer.Argument(help="SERVER.TOOL, or the exposed name.")],
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Show the pinned definition of a held tool against the one the server offers now."""
    hold = _hold(url, token, name)
    typer.echo(f"{hold['server']}.{hold['tool']}: {hold['what']}")
    pinned = "pinned" if hold["pinned"] is not None else "pinned (none: never approved)"
    for line in difflib.unified_diff(
        _lines(hold["pinned"]), _lines(hold["current"]), pinned, "current", lineterm=""
    ):
        typer.echo(line)


@app.command()
def approve(
    name: Annotated[str | None, typer.Argument(help="SERVER.TOOL, or the exposed name.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Approve every held tool.")] = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Approve a held tool's current definition: it is pinned, listed and callable again."""
    if (name is None) == (not every):
        typer.echo("give SERVER.TOOL or --all (not both)", err=True)
        raise typer.Exit(2)
    body: dict[str, Any] = {"all": True} if every else {"name": name}
    answer = admin_request("POST", url, "/api/integrity/approve", token, body, timeout=10)
    for tool in answer["approved"]:
        typer.echo(f"approved {tool['server']}.{tool['tool']} (listed as {tool['exposed']})")
    if not answer["approved"]:
        typer.echo("nothing was held")
    typer.echo(f"{answer['pending']} still held or flagged")
