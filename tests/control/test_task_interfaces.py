"""The control plane's three interfaces: MCP tools on the gateway (nexus.run_goal with progress per step,
nexus.task_status, nexus.list_tasks, nexus.cancel_task), the admin API (/api/tasks) and the CLI
(`nexus task run|ls|show|cancel`). The model is the fake chat-completions server (the one allowed
double: no model is reachable here), driven by the real openai client inside the gateway."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from mcp_nexus.cli.task import app as task_app
from mcp_nexus.frontends.mcp.server import McpFrontend
from support.fake_openai import Reply, error, fake_openai, hold, json_text, request_kind, tool_call
from support.gateway import running
from support.processes import VENV_BIN, child_env

from .helpers import FASTAPI, PLAN, STARLETTE, USES, control_document, goal_of, text_of

pytestmark = pytest.mark.timeout(60)


def cortex_model(body: dict[str, Any]) -> Reply:
    kind = request_kind(body)
    if kind == "plan":
        return json_text({"steps": PLAN})
    if kind == "revise":
        return json_text({"revise": False})
    goal = goal_of(body)
    for key, reply in (
        ("fastapi uses", tool_call("cortex__connect_entities", USES)),
        ("entity fastapi", tool_call("cortex__add_entity", FASTAPI)),
        ("entity starlette", tool_call("cortex__add_entity", STARLETTE)),
    ):
        if key in goal:
            return reply
    return error(500, "unscripted")


async def test_run_goal_over_mcp_reports_progress_per_step(tmp_path: Path) -> None:
    with fake_openai(cortex_model) as fake:
        async with running(control_document(tmp_path, fake.base_url)) as runtime:
            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))

            async with Client(McpFrontend(runtime.gateway, "test").server) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {
                    "nexus.run_goal",
                    "nexus.task_status",
                    "nexus.cancel_task",
                    "nexus.list_tasks",
                } <= names
                result = await client.call_tool(
                    "nexus.run_goal",
                    {"goal": "record that fastapi uses starlette"},
                    progress_callback=on_progress,
                )
                assert not result.is_error, text_of(result)
                summary = result.structured_content
                assert summary is not None and summary["status"] == "succeeded" and summary["steps"] == 3
                assert "step 3: cortex.connect_entities" in text_of(result)
                for _ in range(50):  # progress notifications travel on their own
                    if len(progress) >= 5:
                        break
                    await asyncio.sleep(0.02)
                messages = [m for _v, _t, m in progress]
                assert any(m and m.startswith("plan: 3 steps") for m in messages), messages
                assert [m for m in messages if m and m.startswith("step ")] == [
                    "step 1/3: cortex.add_entity ok",
                    "step 2/3: cortex.add_entity ok",
                    "step 3/3: cortex.connect_entities ok",
                ]
                assert (3.0, 3.0) in [(v, t) for v, t, _m in progress]

                status = await client.call_tool("nexus.task_status", {"task_id": summary["id"]})
                assert (
                    status.structured_content is not None and len(status.structured_content["history"]) == 3
                )
                # With the LLM exchanges the answer is large: the gateway's offload step saves it to a file
                # (the control plane's tools are governed like any other).
                detailed = await client.call_tool(
                    "nexus.task_status", {"task_id": summary["id"], "details": True}
                )
                assert detailed.meta is not None and "nexus/offload" in detailed.meta
                listed = await client.call_tool("nexus.list_tasks", {"status": "succeeded"})
                assert summary["id"] in text_of(listed)
                unknown = await client.call_tool("nexus.task_status", {"task_id": "nope"})
                assert unknown.is_error and "no task with id 'nope'" in text_of(unknown)
                with pytest.raises(
                    MCPError, match=r"nexus.run_goal: 'dance' is not one of \['plan', 'goal'\]"
                ):
                    await client.call_tool(
                        "nexus.run_goal", {"goal": "x", "mode": "dance"}
                    )  # the pipeline's check
                empty = await client.call_tool("nexus.run_goal", {"goal": "  "})
                assert empty.is_error and "nexus.run_goal needs 'goal'" in text_of(empty)
                gone = await client.call_tool("nexus.cancel_task", {"task_id": summary["id"]})
                assert not gone.is_error and "succeeded" in text_of(gone)  # finished tasks stay as they are


async def test_admin_api_and_cli(tmp_path: Path) -> None:
    with fake_openai(cortex_model) as fake:
        async with running(control_document(tmp_path, fake.base_url), http=True) as runtime:
            base = runtime.url.rsplit("/mcp", 1)[0]
            env = child_env(NEXUS_URL=base)

            async def nexus(*args: str) -> tuple[int, str]:
                proc = await asyncio.create_subprocess_exec(
                    str(VENV_BIN / "nexus"), "task", *args, env=env,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                )  # fmt: skip
                out, _ = await asyncio.wait_for(proc.communicate(), 30)
                return proc.returncode or 0, out.decode()

            code, out = await nexus("run", "record that fastapi uses starlette")
            assert code == 0, out
            lines = out.splitlines()
            assert lines[0].startswith("task ") and lines[0].endswith(
                "queued (plan-driven): record that fastapi uses starlette"
            )
            assert (
                lines[1]
                == "plan: add the entity fastapi | add the entity starlette | connect fastapi uses starlette"
            )
            assert lines[2].startswith('  step 1: cortex.add_entity {"category": "tech_stack"') and lines[
                2
            ].endswith("-> ok")
            assert lines[4].startswith("  step 3: cortex.connect_entities") and lines[-1].startswith(
                "succeeded: 3 of 3 steps done"
            )
            task_id = lines[0].split()[1]

            # The other commands in this process (in a thread: the gateway serves on this loop).
            def cli(*args: str) -> tuple[int, str]:
                result = CliRunner().invoke(task_app, list(args), env={"NEXUS_URL": base})
                return result.exit_code, result.output

            code, out = await asyncio.to_thread(cli, "ls")
            assert code == 0 and task_id in out and "succeeded" in out
            code, out = await asyncio.to_thread(cli, "show", task_id)
            assert code == 0 and "[done] 3. connect fastapi uses starlette" in out

            async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
                listed = (await http.get("/api/tasks", params={"status": "succeeded"})).json()
                assert [row["id"] for row in listed["tasks"]] == [task_id]
                assert (await http.get("/api/tasks/nope")).status_code == 404
                bad = await http.post("/api/tasks", json={"goal": ""})
                assert bad.status_code == 400 and bad.json()["path"] == "$.goal"
                assert (await http.get("/api/tasks", params={"status": "sleeping"})).status_code == 400
                document = (await http.get("/api/openapi.json")).json()
                assert {"/api/tasks", "/api/tasks/{id}", "/api/tasks/{id}/cancel"} <= set(document["paths"])

            code, out = await asyncio.to_thread(cli, "cancel", "nope")
            assert code == 1 and "no task with id 'nope'" in out


async def test_without_control_plane_the_routes_say_how_to_turn_it_on(tmp_path: Path) -> None:
    document = control_document(tmp_path, None)
    document.pop("control")
    async with running(document, http=True) as runtime:
        assert runtime.control is None and "nexus.run_goal" not in runtime.gateway.catalog.tools
        base = runtime.url.rsplit("/mcp", 1)[0]
        async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
            answer = await http.get("/api/tasks")
    assert answer.status_code == 409 and "llm.base_url" in answer.json()["error"]


async def test_run_goal_answers_with_the_task_id_before_the_call_times_out(tmp_path: Path) -> None:
    release = threading.Event()

    def slow_model(body: dict[str, Any]) -> Reply:
        if request_kind(body) == "plan":
            return hold(release, json_text({"steps": PLAN}))
        return cortex_model(body)

    document = control_document(tmp_path, None)
    document["gateway"]["timeout"] = 3  # the pipeline's timeout of every call, nexus.run_goal's too
    with fake_openai(slow_model) as fake:
        document["llm"] = control_document(tmp_path, fake.base_url)["llm"]
        try:
            async with running(document) as runtime:
                started = time.monotonic()
                result = await runtime.gateway.call_tool_result(
                    "nexus.run_goal", {"goal": "record that fastapi uses starlette"}
                )
                assert time.monotonic() - started < 3
                assert not result.is_error, text_of(result)
                summary = result.structured_content
                assert summary is not None and summary["status"] == "running"
                assert f"poll nexus.task_status with task_id {summary['id']!r}" in text_of(result)
                release.set()
                done = await runtime.control.wait(summary["id"], 20)
                assert done.status.value == "succeeded"
                polled = await runtime.gateway.call_tool_result(
                    "nexus.task_status", {"task_id": summary["id"]}
                )
                assert (
                    polled.structured_content is not None
                    and polled.structured_content["status"] == "succeeded"
                )
        finally:
            release.set()
