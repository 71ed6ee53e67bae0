"""Each governance step on its own, against a stub terminal (no gateway, no server)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import mcp_types as types
import pytest

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.pipeline.cache import CacheStep
from mcp_nexus.pipeline.call import Caller, InputRound, ToolCall
from mcp_nexus.pipeline.chain import Pipeline
from mcp_nexus.pipeline.classify import ErrorStep
from mcp_nexus.pipeline.errors import GatewayError, InternalError, ToolTimeoutError, UnavailableError
from mcp_nexus.pipeline.metrics import MetricsStep
from mcp_nexus.pipeline.policy import ToolPolicy
from mcp_nexus.pipeline.ratelimit import RateLimitStep
from mcp_nexus.pipeline.retry import RetryStep
from mcp_nexus.pipeline.size_limit import SizeLimitStep
from mcp_nexus.pipeline.timeout import TimeoutStep
from mcp_nexus.stores.memory_cache import MemoryCacheStore


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

    def resolve(self, name: str) -> ToolPolicy:
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
