"""`nexus task`: run goals on a running gateway's control plane and look at its tasks, over the admin API.

nexus task run "record that fastapi uses starlette"     # live progress until it ends
nexus task ls [--status running]
nexus task show ID [--details]
nexus task cancel ID
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer
from rich.console import Console

from mcp_nexus.cli.options import PIPED_HELP, JsonOption, TokenOption, UrlOption, admin_request
from mcp_nexus.cli.table import Column, Listing, print_json, print_listing

app = typer.Typer(
    help="Goals carried out by the gateway's control plane (docs/CONTROL.md).", no_args_is_help=True
)

out = Console()

FINISHED = ("succeeded", "failed", "cancelled")
POLL_SECONDS = 0.3


def _step_line(step: dict[str, Any]) -> str:
    call = (
        f"{step['tool']} {json.dumps(step['arguments'], ensure_ascii=False)}"
        if step.get("tool")
        else "(no tool)"
    )
    outcome = "ok" if step.get("ok") else f"FAILED: {step.get('error')}"
    return f"  step {step['index'] + 1}: {call} -> {outcome}"


@app.command()
def run(
    goal: Annotated[str, typer.Argument(help='What to achieve, e.g. "打开客厅的灯".')],
    mode: Annotated[str | None, typer.Option(help="plan (default) or goal.")] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Follow the task until it ends.")] = True,
    timeout: Annotated[
        float, typer.Option(help="Seconds to follow it (it keeps running after).", min=0)
    ] = 600.0,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Queue a goal and show each step as it happens; exit 0 when it succeeds.

    Ctrl-C stops following the task (exit status 130); the task itself keeps running.
    """
    body: dict[str, Any] = {"goal": goal}
    if mode:
        body["mode"] = mode
    task = admin_request("POST", url, "/api/tasks", token, body, timeout=30)
    typer.echo(f"task {task['id']} queued ({task['mode']}-driven): {task['goal']}")
    if not wait:
        return
    try:
        _follow(task["id"], timeout, url, token)
    except KeyboardInterrupt:
        typer.echo(
            f"stopped following task {task['id']}; it keeps running (`nexus task cancel {task['id']}` ends it)",
            err=True,
        )
        raise typer.Exit(130) from None


def _follow(task_id: str, timeout: float, url: str | None, token: str | None) -> None:
    shown, plan_shown = 0, False
    deadline = time.monotonic() + timeout
    while True:
        view = admin_request("GET", url, f"/api/tasks/{task_id}", token, timeout=30)
        plan = view.get("plan")
        if plan and not plan_shown:
            typer.echo("plan: " + " | ".join(step["description"] for step in plan["steps"]))
            plan_shown = True
        for step in view["history"][shown:]:
            typer.echo(_step_line(step))
        shown = len(view["history"])
        if view["status"] in FINISHED:
            outcome = view.get("result") or view.get("error") or ""
            typer.echo(f"{view['status']}: {outcome}")
            raise typer.Exit(0 if view["status"] == "succeeded" else 1)
        if time.monotonic() > deadline:
            typer.echo(
                f"still {view['status']} after {timeout:g} s: follow it with `nexus task show {task_id}`"
            )
            raise typer.Exit(2)
        time.sleep(POLL_SECONDS)


@app.command("ls", epilog=PIPED_HELP)
def list_tasks(
    status: Annotated[str | None, typer.Option(help="Only tasks in this state.")] = None,
    limit: Annotated[int, typer.Option(help="Most tasks to show.", min=1)] = 20,
    url: UrlOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """The newest tasks with their status."""
    query = f"?limit={limit}" + (f"&status={status}" if status else "")
    rows = admin_request("GET", url, f"/api/tasks{query}", token, timeout=30)["tasks"]
    if as_json:
        print_json(rows)
        return
    listing = Listing(
        (Column("id", key=True), Column("status"), Column("steps", justify="right"), Column("goal")),
        f"{len(rows)} tasks",
    )
    for row in rows:
        listing.add(row["id"], row["status"], str(row["steps"]), row["goal"])
    print_listing(listing, out)


@app.command()
def show(
    task_id: Annotated[str, typer.Argument(help="The task's id.")],
    details: Annotated[
        bool, typer.Option("--details", help="Print the whole task as JSON (LLM exchanges too).")
    ] = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """One task: its plan, steps and result."""
    view = admin_request(
        "GET", url, f"/api/tasks/{task_id}" + ("?details=1" if details else ""), token, timeout=30
    )
    if details:
        typer.echo(json.dumps(view, ensure_ascii=False, indent=2))
        return
    typer.echo(f"task {view['id']} ({view['mode']}-driven): {view['status']}")
    typer.echo(f"goal: {view['execution_data']['goal']}")
    if view.get("plan"):
        for step in view["plan"]["steps"]:
            typer.echo(f"  [{step['status']}] {step['index'] + 1}. {step['description']}")
    for step in view["history"]:
        typer.echo(_step_line(step))
    if view.get("result"):
        typer.echo(f"result: {view['result']}")
    if view.get("error"):
        typer.echo(f"error: {view['error']}")


@app.command()
def cancel(
    task_id: Annotated[str, typer.Argument(help="The task's id.")],
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Cancel a pending or running task."""
    row = admin_request("POST", url, f"/api/tasks/{task_id}/cancel", token, timeout=30)
    typer.echo(f"task {row['id']}: {row['status']}")
