"""The executor end to end: goals carried out over real upstreams (cortex, the home server) through the
gateway's pipeline, with the model played by the fake chat-completions server over HTTP and the
real openai client (the one allowed double: no model is reachable here)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.control.task import TaskStatus, UnifiedTask
from mcp_nexus.runtime import Runtime
from support.fake_openai import Reply, error, fake_openai, hold, json_text, request_kind, text, tool_call
from support.gateway import running

from .helpers import FASTAPI, PLAN, STARLETTE, USES, control_document, goal_of, text_of

pytestmark = pytest.mark.timeout(60)


def scripted(
    *,
    plan: Reply | None = None,
    routes: dict[str, list[Reply]] | None = None,
    revise: Reply | None = None,
    evaluate: list[Reply] | None = None,
) -> Callable[[dict[str, Any]], Reply]:
    """Answers by what is asked: the plan, a route for a goal (by substring, replies in turn), revisions, checks."""
    routes = {key: list(replies) for key, replies in (routes or {}).items()}
    evaluate = list(evaluate or [])

    def answer(body: dict[str, Any]) -> Reply:
        kind = request_kind(body)
        if kind == "plan" and plan is not None:
            return plan
        if kind == "revise":
            return revise or json_text({"revise": False})
        if kind == "evaluate" and evaluate:
            return evaluate.pop(0)
        if kind == "route":
            goal = goal_of(body)
            for key, replies in routes.items():
                if key in goal and replies:
                    return replies.pop(0) if len(replies) > 1 else replies[0]
        return error(500, f"unscripted {kind} request")

    return answer


CORTEX_ROUTES = {
    "fastapi uses": [tool_call("cortex__connect_entities", USES)],
    "entity fastapi": [tool_call("cortex__add_entity", FASTAPI)],
    "entity starlette": [tool_call("cortex__add_entity", STARLETTE)],
}


async def graph(runtime: Runtime) -> dict[str, Any]:
    result = await runtime.gateway.call_tool_result("cortex.read_graph", {})
    data: dict[str, Any] = json.loads(text_of(result))
    return data


async def finish(runtime: Runtime, task: UnifiedTask, timeout: float = 20) -> UnifiedTask:
    done = await runtime.control.wait(task.id, timeout)
    assert done.status.finished, done.view()
    return done


def assert_recorded_fastapi_uses_starlette(graph_data: dict[str, Any]) -> None:
    assert sorted(e["id"] for e in graph_data["entities"]) == ["fastapi", "starlette"]
    assert [(r["src"], r["rel"], r["dst"]) for r in graph_data["relations"]] == [
        ("fastapi", "uses", "starlette")
    ]


async def test_plan_driven_records_fastapi_uses_starlette(tmp_path: Path) -> None:
    script = scripted(plan=json_text({"steps": PLAN}), routes=CORTEX_ROUTES)
    with fake_openai(script) as fake:
        async with running(control_document(tmp_path, fake.base_url)) as runtime:
            task = await runtime.control.submit("record that fastapi uses starlette")
            done = await finish(runtime, task)
            assert done.status is TaskStatus.SUCCEEDED, done.error
            assert [r.tool for r in done.history] == [
                "cortex.add_entity",
                "cortex.add_entity",
                "cortex.connect_entities",
            ]
            assert all(r.ok and r.confidence == 0.8 and r.server_id == "cortex" for r in done.history)
            assert done.plan is not None and [s.status for s in done.plan.steps] == ["done"] * 3
            assert_recorded_fastapi_uses_starlette(await graph(runtime))
            # every LLM exchange is recorded: the plan, three routes, the two revision checks between steps
            assert [x.purpose for x in done.exchanges] == [
                "plan",
                "route",
                "revise",
                "route",
                "revise",
                "route",
            ]
            assert fake.kinds() == ["plan", "route", "revise", "route", "revise", "route"]
            # the calls went through the pipeline, as caller "executor"
            assert runtime.gateway.metrics.per_tool["cortex.add_entity"].calls == 2


async def test_goal_driven_records_fastapi_uses_starlette(tmp_path: Path) -> None:
    script = scripted(
        routes={
            "record that": [tool_call("cortex__add_entity", FASTAPI)],
            "entity starlette": [tool_call("cortex__add_entity", STARLETTE)],
            "fastapi uses": [tool_call("cortex__connect_entities", USES)],
        },
        evaluate=[
            json_text({"done": False, "next_goal": "add the entity starlette"}),
            json_text({"done": False, "next_goal": "connect: fastapi uses starlette"}),
            json_text({"done": True, "answer": "Recorded: fastapi uses starlette."}),
        ],
    )
    with fake_openai(script) as fake:
        async with running(control_document(tmp_path, fake.base_url, mode="goal")) as runtime:
            task = await runtime.control.submit("record that fastapi uses starlette")
            done = await finish(runtime, task)
            assert done.status is TaskStatus.SUCCEEDED, done.error
            assert done.result == "Recorded: fastapi uses starlette."
            assert [r.goal for r in done.history] == [
                "record that fastapi uses starlette",
                "add the entity starlette",
                "connect: fastapi uses starlette",
            ]
            assert_recorded_fastapi_uses_starlette(await graph(runtime))
            assert fake.kinds() == ["route", "evaluate"] * 3


async def test_home_goal_without_llm_uses_the_rule_router(tmp_path: Path) -> None:
    async with running(control_document(tmp_path, None)) as runtime:
        task = await runtime.control.submit(
            "打开客厅的灯", context={"environment": {"devices": (await states(runtime))}}
        )
        done = await finish(runtime, task)
        assert done.status is TaskStatus.SUCCEEDED, done.error
        assert done.history[0].tool == "home.turn_on"
        changed = {d["entity_id"]: d["state"] for d in await states(runtime)}
        assert changed[done.history[0].arguments["entity_id"]] == "on"


async def states(runtime: Runtime) -> list[dict[str, Any]]:
    result = await runtime.gateway.call_tool_result("home.get_states", {})
    return list(result.structured_content["result"])  # type: ignore[index]


async def test_invalid_plan_json_fails_the_task_clearly(tmp_path: Path) -> None:
    with fake_openai(scripted(plan=text("Sure! Step one: add fastapi"))) as fake:
        async with running(control_document(tmp_path, fake.base_url)) as runtime:
            done = await finish(runtime, await runtime.control.submit("record that fastapi uses starlette"))
    assert done.status is TaskStatus.FAILED
    assert done.error is not None and done.error.startswith("no plan: the model's plan is not valid JSON")
    assert "Sure! Step one" in done.error


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (tool_call("cortex__add_entity", '{"category": "tech_stack", "id": '), "not valid JSON"),
        (tool_call("cortex__delete_everything", {}), "unknown tool 'cortex__delete_everything'"),
        (
            tool_call("cortex__add_entity", {**FASTAPI, "owner": "me"}),
            "arguments owner that cortex.add_entity does not take",
        ),
        (
            tool_call("cortex__add_entity", {**FASTAPI, "id": "Not A Slug!"}),
            "cortex.add_entity",
        ),  # the pipeline's check
    ],
)
async def test_bad_model_output_is_a_clear_failed_step_then_corrected(
    tmp_path: Path, bad: Reply, expected: str
) -> None:
    routes = {"entity fastapi": [bad, tool_call("cortex__add_entity", FASTAPI)]}
    script = scripted(plan=json_text({"steps": ["add the entity fastapi"]}), routes=routes)
    with fake_openai(script) as fake:
        async with running(control_document(tmp_path, fake.base_url, step_retries=1)) as runtime:
            done = await finish(runtime, await runtime.control.submit("add fastapi"))
            failed, succeeded = done.history
            assert not failed.ok and failed.error is not None and expected in failed.error, failed.error
            assert succeeded.ok and succeeded.attempt == 2
            assert done.status is TaskStatus.SUCCEEDED
            # the retry was routed with the failure in its history, so the model could correct itself
            retry_prompt = [b for b in fake.requests if request_kind(b) == "route"][1]["messages"][1][
                "content"
            ]
            assert "failed:" in retry_prompt


async def test_a_step_that_keeps_failing_fails_the_task(tmp_path: Path) -> None:
    routes = {"entity fastapi": [tool_call("cortex__nope", {})]}
    script = scripted(plan=json_text({"steps": ["add the entity fastapi", "another"]}), routes=routes)
    with fake_openai(script) as fake:
        async with running(
            control_document(tmp_path, fake.base_url, step_retries=1, max_revisions=0)
        ) as runtime:
            done = await finish(runtime, await runtime.control.submit("add fastapi"))
    assert done.status is TaskStatus.FAILED and len(done.history) == 2
    assert done.error is not None and done.error.startswith(
        "step 1 (add the entity fastapi) failed: the model called unknown tool"
    )


async def test_failed_step_can_be_revised(tmp_path: Path) -> None:
    routes = {
        "entity fastapi": [tool_call("cortex__nope", {})],
        "search": [tool_call("cortex__search_knowledge", {"query": "fastapi"})],
    }
    script = scripted(
        plan=json_text({"steps": ["add the entity fastapi"]}),
        routes=routes,
        revise=json_text({"revise": True, "steps": ["search for fastapi"]}),
    )
    with fake_openai(script) as fake:
        async with running(control_document(tmp_path, fake.base_url, step_retries=0)) as runtime:
            done = await finish(runtime, await runtime.control.submit("add fastapi"))
    assert done.status is TaskStatus.SUCCEEDED, done.error
    assert done.plan is not None and done.plan.revisions == 1
    assert [s.status for s in done.plan.steps] == ["failed", "done"]


async def test_max_steps_bounds_a_goal_that_never_ends(tmp_path: Path) -> None:
    script = scripted(
        routes={"": [tool_call("cortex__search_knowledge", {"query": "x"})]},
        evaluate=[json_text({"done": False, "next_goal": f"search again {i}"}) for i in range(10)],
    )
    with fake_openai(script) as fake:
        async with running(control_document(tmp_path, fake.base_url, mode="goal", max_steps=3)) as runtime:
            done = await finish(runtime, await runtime.control.submit("search forever"))
    assert done.status is TaskStatus.FAILED and len(done.history) == 3
    assert done.error == "the task used its 3 steps (control.max_steps) without finishing"


async def test_deadline_stops_a_task_waiting_for_the_model(tmp_path: Path) -> None:
    release = threading.Event()
    with fake_openai(scripted(plan=hold(release, json_text({"steps": ["x"]})))) as fake:
        try:
            async with running(control_document(tmp_path, fake.base_url, task_deadline=0.5)) as runtime:
                done = await finish(runtime, await runtime.control.submit("slow"), timeout=10)
        finally:
            release.set()
    assert done.status is TaskStatus.FAILED and done.error == "the task passed its deadline of 0.5 s"


async def test_cancel_a_running_task_and_a_pending_one(tmp_path: Path) -> None:
    release = threading.Event()
    script = scripted(plan=hold(release, json_text({"steps": ["x"]})))
    with fake_openai(script) as fake:
        try:
            async with running(control_document(tmp_path, fake.base_url)) as runtime:
                control = runtime.control
                running_task = await control.submit("first")
                queued = await control.submit("second")  # one worker: waits behind the first
                for _ in range(200):
                    if fake.requests:
                        break
                    await asyncio.sleep(0.02)
                cancelled = await control.cancel(queued.id)
                assert (
                    cancelled.status is TaskStatus.CANCELLED
                    and cancelled.error == "cancelled before it started"
                )
                stopped = await control.cancel(running_task.id)
                assert stopped.status is TaskStatus.CANCELLED, stopped.view()
                assert [t.status for t in await control.list()] == [
                    TaskStatus.CANCELLED,
                    TaskStatus.CANCELLED,
                ]
        finally:
            release.set()


async def test_a_graceful_stop_leaves_the_task_pending_and_the_next_gateway_finishes_it(
    tmp_path: Path,
) -> None:
    release = threading.Event()
    held = {"once": True}

    def answer(body: dict[str, Any]) -> Reply:
        if request_kind(body) == "route" and "entity starlette" in goal_of(body) and held["once"]:
            held["once"] = False
            return hold(release, tool_call("cortex__add_entity", STARLETTE))
        return scripted(plan=json_text({"steps": PLAN}), routes=CORTEX_ROUTES)(body)

    document = control_document(tmp_path, None)
    with fake_openai(answer) as fake:
        document["llm"] = control_document(tmp_path, fake.base_url)["llm"]
        try:
            async with running(document) as runtime:
                task = await runtime.control.submit("record that fastapi uses starlette")
                for _ in range(250):
                    if not held["once"]:
                        break
                    await asyncio.sleep(0.02)
                assert not held["once"], "step 2 never asked the model"
            # the first gateway stopped while step 2 waited for the model
        finally:
            release.set()
        async with running(document) as runtime:
            done = await finish(runtime, task)
            assert done.status is TaskStatus.SUCCEEDED, done.error
            assert done.resumed == 1
            interrupted = [r for r in done.history if r.error and r.error.startswith("interrupted")]
            assert len(interrupted) == 1 and interrupted[0].plan_step == 1
            assert [r.tool for r in done.history if r.ok] == [
                "cortex.add_entity",
                "cortex.add_entity",
                "cortex.connect_entities",
            ]
            assert_recorded_fastapi_uses_starlette(await graph(runtime))
