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
        policies = self.policies
        if policies is None or call.method != "tools/call":
            return self._entry(call)
        policy = policies.resolve(call.name, call.caller.profile)
        if policy is None:
            if policies.catalog.connecting_owners(call.name):
                return self._once_listed(call, policies)
            return self._entry(call)  # not listed: every step, as the route decides what happens
        return self._entry_for(call, policy)(call)

    async def _once_listed(self, call: ToolCall, policies: PolicyResolver) -> Any:
        """A name a still-starting server may offer: its policy (TTL, limits) is known only once it is listed.

        So the call waits for that server first (up to the default call timeout), and only
        then enters the chain: a call made right after start is cached, limited and timed like
        any later one.
        """
        await policies.catalog.wait_for_tool(call.name, policies.default_timeout())
        policy = policies.resolve(call.name, call.caller.profile)
        entry = self._entry if policy is None else self._entry_for(call, policy)
        return await entry(call)

    def _entry_for(self, call: ToolCall, policy: ToolPolicy) -> CallNext:
        call.policy = policy
        key = call.name if policy.profile is None else f"{call.name}@{policy.profile}"
        made = self._by_tool.get(key)
        if made is not None and made[0] is policy:
            return made[1]
        steps = [step for step in self.steps if _applies(step, policy)]
        entry = _compose(steps, self.terminal)
        self._by_tool[key] = (policy, entry)
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
