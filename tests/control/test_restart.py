"""A task survives a gateway restart mid-plan: `nexus serve` (a real process) is killed with SIGKILL while
the plan's second step waits for the model, started again on the same data, and the task resumes at
that step and finishes. The model is the fake chat-completions server (the one allowed double: no
model is reachable here), spoken to by the real openai client inside the gateway."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from support.fake_openai import Reply, error, fake_openai, hold, json_text, request_kind, tool_call
from support.processes import VENV_BIN, free_port, running, wait_for_http
from support.served_gateway import gateway_env

from .helpers import FASTAPI, PLAN, STARLETTE, USES, control_document, goal_of

pytestmark = pytest.mark.timeout(90)


def wait_until(what: str, check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_task_resumes_at_its_step_after_a_killed_gateway(tmp_path: Path) -> None:
    release = threading.Event()
    held = {"once": True}

    def answer(body: dict[str, Any]) -> Reply:
        kind = request_kind(body)
        if kind == "plan":
            return json_text({"steps": PLAN})
        if kind == "revise":
            return json_text({"revise": False})
        goal = goal_of(body)
        if "entity fastapi" in goal:
            return tool_call("cortex__add_entity", FASTAPI)
        if "entity starlette" in goal:
            if held["once"]:  # the first gateway dies while waiting for this answer
                held["once"] = False
                return hold(release, tool_call("cortex__add_entity", STARLETTE))
            return tool_call("cortex__add_entity", STARLETTE)
        if "fastapi uses" in goal:
            return tool_call("cortex__connect_entities", USES)
        return error(500, "unscripted")

    with fake_openai(answer) as fake:
        config = tmp_path / "nexus.json"
        config.write_text(json.dumps(control_document(tmp_path, fake.base_url)))
        env = gateway_env(tmp_path)

        def serve(port: int, log: Path) -> Any:
            args = [str(VENV_BIN / "nexus"), "serve", "-c", str(config), "--port", str(port), "--no-watch"]
            return running(args, env=env, log=log)

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        try:
            with serve(port, tmp_path / "first.log") as first:
                wait_for_http(base + "/healthz", proc=first)
                created = httpx2.post(
                    base + "/api/tasks", json={"goal": "record that fastapi uses starlette"}, timeout=10
                )
                assert created.status_code == 200, created.text
                task_id = created.json()["id"]
                wait_until("step 2 to ask the model", lambda: not held["once"])
                os.killpg(first.pid, signal.SIGKILL)  # no drain, no goodbye: the process is gone
                first.wait(10)
        finally:
            release.set()  # the held answer goes nowhere: its gateway is dead

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with serve(port, tmp_path / "second.log") as second:
            wait_for_http(base + "/healthz", proc=second)

            def finished() -> dict[str, Any] | None:
                view: dict[str, Any] = httpx2.get(f"{base}/api/tasks/{task_id}", timeout=10).json()
                return view if view["status"] in ("succeeded", "failed", "cancelled") else None

            view = wait_until("the resumed task to finish", finished)
            assert view["status"] == "succeeded", view
            assert view["resumed"] == 1
            # step 1 ran once, before the kill; the resumed task went on at step 2
            assert [(h["tool"], h["arguments"].get("id")) for h in view["history"] if h["ok"]] == [
                ("cortex.add_entity", "fastapi"),
                ("cortex.add_entity", "starlette"),
                ("cortex.connect_entities", None),
            ]
            graph = httpx2.post(
                f"{base}/api/tools/cortex.read_graph/call", json={"arguments": {}}, timeout=10
            ).json()
            data = json.loads(graph["content"][0]["text"])
            assert sorted(e["id"] for e in data["entities"]) == ["fastapi", "starlette"]
            assert [(r["src"], r["rel"], r["dst"]) for r in data["relations"]] == [
                ("fastapi", "uses", "starlette")
            ]
    assert fake.kinds().count("plan") == 1  # the plan was saved with the task, not asked for again
