"""The middleware chain every call runs through, whatever frontend it came from."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

from mcp_nexus.pipeline.call import CallNext, Middleware, ToolCall
from mcp_nexus.pipeline.policy import PolicyResolver, ToolPolicy


class Pipeline:
    """Composes the steps once, so a call costs one call per step and no allocation for the chain.

    Given the policy resolver, a tools/call runs a chain made for its tool's policy: a step
    that says it cannot change a call under that policy (`applies_to(policy)` is False: no TTL
    for the cache, no limit for the rate limiter, ...) is left out of it. The chain is made once
    per policy object; a reload or a catalog change resolves a new policy, hence a new chain.
    The policy resolved here travels on the call (`call.policy`), so no step resolves it again.
    """

    def __init__(
        self, steps: Sequence[Middleware], terminal: CallNext, policies: PolicyResolver | None = None
    ) -> None:
        self.steps = list(steps)
        self.terminal = terminal
        self.policies = policies
        self._entry = _compose(self.steps, terminal)
        self._by_tool: dict[str, tuple[ToolPolicy, CallNext]] = {}

    def __call__(self, call: ToolCall) -> Awaitable[Any]:
        return self._entry_for(call)(call)

    def _entry_for(self, call: ToolCall) -> CallNext:
        if self.policies is None or call.method != "tools/call":
            return self._entry
        policy = self.policies.resolve(call.name)
        if policy is None:
            return self._entry  # not listed (yet): every step, as the route decides what happens
        call.policy = policy
        made = self._by_tool.get(call.name)
        if made is not None and made[0] is policy:
            return made[1]
        steps = [step for step in self.steps if _applies(step, policy)]
        entry = _compose(steps, self.terminal)
        self._by_tool[call.name] = (policy, entry)
        return entry


def _applies(step: Middleware, policy: ToolPolicy) -> bool:
    applies_to = getattr(step, "applies_to", None)
    return applies_to is None or bool(applies_to(policy))


def _compose(steps: Sequence[Middleware], terminal: CallNext) -> CallNext:
    handler = terminal
    for step in reversed(steps):
        handler = _bind(step, handler)
    return handler


def _bind(step: Middleware, call_next: CallNext) -> CallNext:
    # A plain function that returns the step's coroutine: no coroutine of its own per step.
    def run(call: ToolCall) -> Any:
        return step(call, call_next)

    return run
