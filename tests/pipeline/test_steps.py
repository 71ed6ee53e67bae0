"""Each step on its own, against a stub terminal (no gateway, no server); the route against a catalog of
stub upstreams."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.errors import (
    GatewayError,
    InternalError,
    InvalidArgumentsError,
    ToolTimeoutError,
    UnavailableError,
    UnknownToolError,
)
from mcp_nexus.pipeline.call import Caller, InputRound, ToolCall
from mcp_nexus.pipeline.chain import Pipeline
from mcp_nexus.pipeline.offload_folder import OffloadFolder
from mcp_nexus.pipeline.policy import ToolPolicy
from mcp_nexus.pipeline.steps.cache import CacheStep
from mcp_nexus.pipeline.steps.classify import ErrorStep
from mcp_nexus.pipeline.steps.metrics import MetricsStep
from mcp_nexus.pipeline.steps.offload import Offloader, OffloadStep
from mcp_nexus.pipeline.steps.ratelimit import RateLimitStep
from mcp_nexus.pipeline.steps.retry import RetryStep
from mcp_nexus.pipeline.steps.route import RouteStep
from mcp_nexus.pipeline.steps.size_limit import SizeLimitStep
from mcp_nexus.pipeline.steps.timeout import TimeoutStep
from mcp_nexus.pipeline.steps.validate import ValidateStep
from mcp_nexus.stores.memory_cache import MemoryCacheStore
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import UpstreamUnavailable
from support.stub_upstream import StubUpstream, tool


def policy(**changes: Any) -> ToolPolicy:
    base = ToolPolicy(
        tool="t",
        server=None,
        upstream_tool=None,
        cache_ttl=0,
        rate_limit=None,
        server_rate_limit=None,
        offload_threshold=None,
        max_result_bytes=None,
        timeout=30,
        retries=0,
        idempotent=False,
        input_schema=None,
    )
    return replace(base, **changes)


class StubPolicies:
    """A PolicyResolver with one fixed policy and an empty catalog."""

    def __init__(self, fixed: ToolPolicy) -> None:
        self.fixed = fixed
        self.catalog = Catalog()

    def resolve(self, name: str, profile: str | None = None) -> ToolPolicy:
        return self.fixed

    def candidate_timeouts(self, entry: Any) -> dict[str, float]:
        return {}


class Terminal:
    """The stub end of the chain: answers from a script and counts calls."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[ToolCall] = []

    async def __call__(self, call: ToolCall) -> Any:
        self.calls.append(call)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return await answer(call)
        return answer


def result(text: str = "ok", *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def call(name: str = "t", frontend: str = "api", **arguments: Any) -> ToolCall:
    return ToolCall(name, dict(arguments), Caller(frontend))


async def test_pipeline_runs_steps_in_order_around_the_terminal() -> None:
    seen: list[str] = []

    def step(label: str) -> Any:
        async def run(call: ToolCall, call_next: Any) -> Any:
            seen.append(f"{label}>")
            outcome = await call_next(call)
            seen.append(f"<{label}")
            return outcome

        return run

    terminal = Terminal(result())
    assert (await Pipeline([step("a"), step("b")], terminal)(call())).content[0].text == "ok"  # type: ignore[union-attr]
    assert seen == ["a>", "b>", "<b", "<a"]


async def test_metrics_counts_calls_errors_and_latency() -> None:
    metrics = MetricsStep()
    await Pipeline([metrics], Terminal(result()))(call())
    await Pipeline([metrics], Terminal(result(error=True)))(call())
    with pytest.raises(RuntimeError):
        await Pipeline([metrics], Terminal(RuntimeError("x")))(call())
    stats = metrics.per_tool["t"]
    assert (stats.calls, stats.errors) == (3, 2) and stats.max_seconds >= 0


async def test_errors_step_classifies_any_failure_with_one_data_shape() -> None:
    with pytest.raises(InternalError) as caught:
        await Pipeline([ErrorStep()], Terminal(ValueError("boom")))(call())
    data = caught.value.data
    assert {"category", "method", "timestamp", "original_error", "tool"} <= set(data)
    assert "boom" in data["original_error"]


async def test_timeout_bounds_the_call_and_sets_the_typed_deadline() -> None:
    async def slow(c: ToolCall) -> Any:
        await asyncio.sleep(5)

    step = TimeoutStep(StubPolicies(policy(timeout=0.05)))  # type: ignore[arg-type]
    with pytest.raises(ToolTimeoutError):
        await Pipeline([step], Terminal(slow))(call())
    seen = Terminal(result())
    await Pipeline([step], seen)(call())
    assert seen.calls[0].timeout == 0.05


async def test_retry_repeats_only_idempotent_tools_after_transport_failures() -> None:
    flaky = Terminal(UnavailableError("down"), result("back"))
    step = RetryStep(StubPolicies(policy(retries=2, idempotent=True)), backoff=0.0)  # type: ignore[arg-type]
    answer = await Pipeline([step], flaky)(call())
    assert answer.content[0].text == "back" and len(flaky.calls) == 2 and flaky.calls[-1].retries == 1
    once = Terminal(UnavailableError("down"), result("never"))
    with pytest.raises(UnavailableError):
        await Pipeline([RetryStep(StubPolicies(policy(retries=2, idempotent=False)), backoff=0.0)], once)(
            call()
        )  # type: ignore[arg-type]
    assert len(once.calls) == 1


async def test_cache_serves_hits_and_merges_identical_calls_in_flight() -> None:
    cache = CacheStep(StubPolicies(policy(cache_ttl=60)), MemoryCacheStore(max_entries=10, max_bytes=10_000))  # type: ignore[arg-type]
    release = asyncio.Event()

    async def slow(c: ToolCall) -> Any:
        await release.wait()
        return result("fresh")

    terminal = Terminal(slow)
    chain = Pipeline([cache], terminal)
    first, second = asyncio.ensure_future(chain(call(x=1))), asyncio.ensure_future(chain(call(x=1)))
    await asyncio.sleep(0.01)
    release.set()
    answers = await asyncio.gather(first, second)
    third = call(x=1)
    hit = await chain(third)
    assert len(terminal.calls) == 1  # one upstream call for three callers
    assert [a.content[0].text for a in answers] == ["fresh", "fresh"]
    assert third.cache == "hit" and hit.meta["nexus/cache"] == "hit"
    later_round = ToolCall("t", {"x": 1}, Caller("api"), round=InputRound({"k": {}}, "s"))
    await chain(later_round)
    assert len(terminal.calls) == 2  # a 2026-07-28 input round is never served from the cache


async def test_rate_limit_answers_with_a_system_alert_and_spares_the_terminal() -> None:
    step = RateLimitStep(StubPolicies(policy(rate_limit="2/minute")))  # type: ignore[arg-type]
    terminal = Terminal(result())
    chain = Pipeline([step], terminal)
    outcomes = [await chain(call()) for _ in range(3)]
    assert len(terminal.calls) == 2
    assert outcomes[2].is_error and outcomes[2].content[0].text.startswith("SYSTEM_ALERT")


async def test_size_limit_cuts_per_frontend_and_reads_the_limits_each_call() -> None:
    limits = {"xiaozhi": 100}
    step = SizeLimitStep(StubPolicies(policy()), None, lambda: limits)  # type: ignore[arg-type]
    chain = Pipeline([step], Terminal(result("x" * 500)))
    cut = await chain(call(frontend="xiaozhi"))
    assert len(cut.content[0].text.encode()) <= 100 and "truncated by Nexus" in cut.content[0].text
    assert len((await chain(call(frontend="api"))).content[0].text) == 500
    limits["xiaozhi"] = 1000  # a reload: applies to the next call
    assert len((await chain(call(frontend="xiaozhi"))).content[0].text) == 500


def test_gateway_errors_are_json_rpc_errors() -> None:
    error = UnavailableError("gone", data={"server": "s"})
    assert isinstance(error, GatewayError) and error.to_wire() == {
        "code": -32003,
        "message": "gone",
        "data": {"server": "s"},
    }


# -- validate ---------------------------------------------------------------------------------

NUMBERS_SCHEMA = {
    "type": "object",
    "properties": {"level": {"type": "integer", "maximum": 100}, "label": {"type": "string"}},
    "required": ["level"],
}


def catalog_with(*servers: StubUpstream) -> Catalog:
    catalog = Catalog()
    catalog.rebuild(servers)  # type: ignore[arg-type]
    return catalog


async def test_validate_passes_valid_arguments_and_refuses_others_naming_path_and_rule() -> None:
    catalog = catalog_with(StubUpstream("s", [tool("set", input_schema=NUMBERS_SCHEMA)]))
    terminal = Terminal(result())
    chain = Pipeline([ValidateStep(catalog)], terminal)
    await chain(call("s.set", level=40, label="x"))
    with pytest.raises(InvalidArgumentsError) as caught:
        await chain(call("s.set", level=101))
    assert caught.value.code == -32602
    assert "s.set" in caught.value.message and "$.level" in caught.value.message
    assert caught.value.data["schema_path"] == "properties/level/maximum"
    with pytest.raises(InvalidArgumentsError, match="'level' is a required property"):
        await chain(call("s.set", label="x"))
    assert len(terminal.calls) == 1  # refused calls never reach the server


async def test_validate_takes_quoted_numbers_as_numbers_and_nothing_looser() -> None:
    catalog = catalog_with(StubUpstream("s", [tool("set", input_schema=NUMBERS_SCHEMA)]))
    terminal = Terminal(result())
    chain = Pipeline([ValidateStep(catalog)], terminal)
    sent = call("s.set", level="40", label="40")
    await chain(sent)
    assert terminal.calls[0].arguments == {"level": 40, "label": "40"}  # the string field stays a string
    for bad in ("forty", "40.5", "101"):
        with pytest.raises(InvalidArgumentsError):
            await chain(call("s.set", level=bad))
    assert len(terminal.calls) == 1


async def test_validate_leaves_unknown_tools_and_invalid_schemas_to_others() -> None:
    broken_schema = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}
    catalog = catalog_with(StubUpstream("s", [tool("odd", input_schema=broken_schema)]))
    terminal = Terminal(result())
    chain = Pipeline([ValidateStep(catalog)], terminal)
    await chain(call("s.odd", x=object()))  # the upstream stays the judge of its own schema
    await chain(call("nobody.offers", anything=1))  # the route says "unknown"
    assert len(terminal.calls) == 2


# -- offload ------------------------------------------------------------------------------------


def offload_step(folder: Path, threshold: int | None) -> OffloadStep:
    offloader = Offloader(OffloadFolder(folder, max_age=3600, max_bytes=10_000_000))
    return OffloadStep(StubPolicies(policy(offload_threshold=threshold)), offloader)  # type: ignore[arg-type]


async def test_offload_saves_a_large_result_and_answers_with_an_alert_and_a_preview(tmp_path: Path) -> None:
    payload = json.dumps([{"id": i, "name": f"item {i}"} for i in range(200)])
    answer = await Pipeline([offload_step(tmp_path, 1000)], Terminal(result(payload)))(call())
    text = answer.content[0].text
    assert text.startswith(f"SYSTEM_ALERT: Data too large ({len(payload)} bytes). Saved to file tool_output_")
    assert "python_sandbox" in text and "array of 200 items" in text
    name = answer.meta["nexus/offload"]["file"]
    assert answer.meta["nexus/offload"]["bytes"] == len(payload)
    assert (tmp_path / name).read_text() == payload  # the data itself, not the preview
    assert len(text.encode()) < 1000 and not answer.is_error


async def test_offload_leaves_small_results_input_requests_and_untuned_tools_alone(tmp_path: Path) -> None:
    small = result("x" * 100)
    assert await Pipeline([offload_step(tmp_path, 1000)], Terminal(small))(call()) == small
    question = types.InputRequiredResult(request_state="round-1")
    assert await Pipeline([offload_step(tmp_path, 10)], Terminal(question))(call()) is question
    large = result("x" * 5000)
    assert await Pipeline([offload_step(tmp_path, None)], Terminal(large))(call()) == large
    assert list(tmp_path.iterdir()) == []


async def test_offload_into_a_folder_it_cannot_write_passes_the_full_result_marked(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    large = "x" * 5000
    answer = await Pipeline([offload_step(blocker / "offload", 1000)], Terminal(result(large)))(call())
    assert answer.content[0].text == large
    assert "cannot write to the offload folder" in answer.meta["nexus/offloadError"]


# -- route (a catalog of stub upstreams) -----------------------------------------------------


def routed(*servers: StubUpstream) -> tuple[Pipeline, Catalog]:
    catalog = catalog_with(*servers)
    return Pipeline([], RouteStep(catalog, answer_input=lambda call: None)), catalog


async def test_route_tries_candidates_by_priority_and_falls_back_on_transport_failures() -> None:
    primary = StubUpstream(
        "primary", ["echo"], namespace="", priority=90, answers=[UpstreamUnavailable("gone")]
    )
    backup = StubUpstream("backup", ["echo"], namespace="", priority=10, answers=[result("from backup")])
    chain, _ = routed(backup, primary)
    sent = call("echo", text="hi")
    answer = await chain(sent)
    assert answer.content[0].text == "from backup" and answer.meta["nexus/server"] == "backup"
    assert sent.servers_tried == ["primary", "backup"] and sent.server == "backup"
    assert primary.calls[0]["arguments"] == {"text": "hi"} and primary.calls[0]["name"] == "echo"


@pytest.mark.parametrize(
    "own_answer",
    [result("primary says no", error=True), MCPError(types.INVALID_PARAMS, "bad arguments, says the server")],
    ids=["isError", "json-rpc-error"],
)
async def test_route_takes_a_servers_own_answer_as_final(own_answer: Any) -> None:
    primary = StubUpstream("primary", ["echo"], namespace="", priority=90, answers=[own_answer])
    backup = StubUpstream("backup", ["echo"], namespace="", priority=10, answers=[result("never")])
    chain, _ = routed(primary, backup)
    if isinstance(own_answer, BaseException):
        with pytest.raises(MCPError, match="says the server"):
            await chain(call("echo"))
    else:
        assert (await chain(call("echo"))).content[0].text == "primary says no"
    assert backup.calls == []


async def test_route_passes_timeouts_per_candidate_and_reports_when_all_time_out() -> None:
    slow = MCPError(types.REQUEST_TIMEOUT, "timed out")
    first = StubUpstream("first", ["echo"], namespace="", priority=90, answers=[slow])
    second = StubUpstream("second", ["echo"], namespace="", priority=10, answers=[slow])
    chain, _ = routed(first, second)
    sent = call("echo")
    sent.timeout = 9.0
    sent.candidate_timeouts = {"first": 0.5}
    with pytest.raises(ToolTimeoutError) as caught:
        await chain(sent)
    assert [first.calls[0]["timeout"], second.calls[0]["timeout"]] == [0.5, 9.0]
    assert "did not answer within 9 s on server 'second'" in caught.value.message
    assert caught.value.data["servers_tried"] == ["first", "second"]


async def test_route_skips_servers_that_are_not_ready_and_says_so_when_none_is() -> None:
    catalog = catalog_with(StubUpstream("only", ["echo"]))
    only = catalog.tools["only.echo"].candidates[0].upstream
    only.state = UpstreamState.DEGRADED  # still serving
    chain = Pipeline([], RouteStep(catalog, answer_input=lambda call: None))
    only.answers = [result("degraded but here")]
    assert (await chain(call("only.echo"))).content[0].text == "degraded but here"
    only.state = UpstreamState.CRASHED  # after the catalog was built: the route finds out
    with pytest.raises(UnavailableError) as caught:
        await chain(call("only.echo"))
    assert "'only'" in caught.value.message and "CRASHED" in caught.value.message


async def test_route_waits_for_a_server_still_connecting_that_turns_out_to_offer_the_name() -> None:
    late = StubUpstream("late", ready=False, connecting=True, answers=[result("late but here")])
    chain, catalog = routed(late)

    async def join() -> None:
        await asyncio.sleep(0.1)
        late.become_ready(["echo"])
        catalog.rebuild([late])  # type: ignore[list-item]

    joining = asyncio.ensure_future(join())
    answer = await chain(call("late.echo"))
    await joining
    assert answer.content[0].text == "late but here" and answer.meta["nexus/server"] == "late"


async def test_route_names_the_server_of_a_tool_that_is_down() -> None:
    down = StubUpstream("down", ["echo"], ready=False)
    down.state = UpstreamState.CRASHED
    down.last_error = "process exited with code 3"
    down.next_attempt_at = time.monotonic() + 4
    chain, _ = routed(down)
    with pytest.raises(UnavailableError) as caught:
        await chain(call("down.echo"))
    message = caught.value.message
    assert caught.value.code == -32003 and caught.value.data["server"] == "down"
    assert (
        "'down'" in message and "CRASHED" in message and "code 3" in message and "tried again in" in message
    )


async def test_route_answers_an_unknown_name_with_the_closest_names() -> None:
    chain, _ = routed(StubUpstream("f", ["echo", "exit"]))
    with pytest.raises(UnknownToolError) as caught:
        await chain(call("f.ecko"))
    assert caught.value.code == -32602 and "did you mean f.echo" in caught.value.message
    assert "f.echo" in caught.value.data["suggestions"]


async def test_route_runs_local_tools_itself_and_notes_declared_output_schemas() -> None:
    async def handler(arguments: dict[str, Any], caller: Any) -> types.CallToolResult:
        return result(f"local {arguments['x']}")

    typed = tool("typed", output_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    chain, catalog = routed(StubUpstream("s", [typed], answers=[result("typed answer")]))
    catalog.local_tools["mine"] = LocalTool(tool("mine"), handler)
    catalog.rebuild([catalog.upstreams[0]])
    local = call("mine", x=1)
    assert (await chain(local)).content[0].text == "local 1" and local.server == "nexus"
    sent = call("s.typed")
    await chain(sent)
    assert sent.declares_output_schema and not local.declares_output_schema
