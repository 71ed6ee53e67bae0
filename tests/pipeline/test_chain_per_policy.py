"""A tools/call runs the chain made for its tool's policy: steps that cannot act are left out,
and a new policy (reload, catalog change) makes a new chain at once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp_nexus.config.load import config_from_document
from mcp_nexus.pipeline.call import CallNext, ToolCall
from mcp_nexus.pipeline.chain import Pipeline
from mcp_nexus.pipeline.policy import ToolPolicy
from pipeline.test_steps import Terminal, call, policy, result
from support.gateway import running_gateway
from support.governance_gateway import counts, document, embedded, text


class SwitchablePolicies:
    """A resolver whose one policy a test replaces, as a reload does."""

    def __init__(self, current: ToolPolicy) -> None:
        self.current = current
        self.resolved = 0

    def resolve(self, name: str, profile: str | None = None) -> ToolPolicy:
        self.resolved += 1
        return self.current


class CacheLike:
    """A step that acts only for tools with a TTL, and records what it saw."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def applies_to(self, policy: ToolPolicy) -> bool:
        return policy.cache_ttl > 0

    async def __call__(self, call: ToolCall, call_next: CallNext) -> Any:
        self.seen.append(call.policy)
        return await call_next(call)


async def test_a_step_that_cannot_act_is_left_out_until_the_policy_changes() -> None:
    policies = SwitchablePolicies(policy(cache_ttl=0))
    step = CacheLike()
    always: list[str] = []

    async def plain(call: ToolCall, call_next: CallNext) -> Any:  # no applies_to: always in
        always.append(call.name)
        return await call_next(call)

    chain = Pipeline([plain, step], Terminal(result()), policies)  # type: ignore[arg-type]
    await chain(call())
    await chain(call())
    assert step.seen == [] and always == ["t", "t"]
    assert policies.resolved == 2  # once per call, however many steps read the policy

    policies.current = replace(policies.current, cache_ttl=60)  # a reload resolves a new policy
    await chain(call())
    assert step.seen == [policies.current]  # the step runs, with the policy resolved at entry
    assert always == ["t", "t", "t"]


async def test_without_a_resolver_or_for_other_requests_every_step_runs() -> None:
    step = CacheLike()
    await Pipeline([step], Terminal(result()))(call())
    other = call()
    other.method = "resources/read"
    await Pipeline([step], Terminal(result()), SwitchablePolicies(policy()))(other)  # type: ignore[arg-type]
    assert len(step.seen) == 2


async def test_limits_and_ttls_added_by_a_reload_apply_to_the_next_call(tmp_path: Path) -> None:
    def doc(**gateway: Any) -> dict[str, Any]:
        return document(tmp_path, {"gov": embedded(rate_limit=None)}, **gateway)

    async with running_gateway(doc()) as gw:
        for i in range(3):  # no limit, no TTL: neither step is in this tool's chain
            assert not (await gw.call_tool("gov.stamp", {"key": str(i)})).is_error
        new, _ = config_from_document(doc(caller_rate_limit="1/minute", cache_ttl=60))
        await gw.reload(new)
        assert not (await gw.call_tool("gov.stamp", {"key": "a"})).is_error
        refused = await gw.call_tool("gov.stamp", {"key": "b"})
        assert refused.is_error and "caller api:- (1 per minute)" in text(refused)
        assert (await counts(gw))["stamp"] == 4

        new, _ = config_from_document(doc())  # and taken away again: the steps leave the chain
        await gw.reload(new)
        assert not (await gw.call_tool("gov.stamp", {"key": "c"})).is_error
        assert not (await gw.call_tool("gov.stamp", {"key": "c"})).is_error
        assert (await counts(gw))["stamp"] == 6
