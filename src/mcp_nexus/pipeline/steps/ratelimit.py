"""Rate limits with the `limits` library's moving window: per tool, and optionally per server and per caller.

Over a limit the upstream is not called; the caller gets an `isError` result whose text
starts with `SYSTEM_ALERT:` and says which limit and how long to wait. The step sits inside
the cache, so cache hits never count. The windows live in memory, or in Redis shared by every
replica (`stores.limits`, stores/rate_windows.py): then a limit holds for all replicas together.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from limits import RateLimitItem, parse
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string

from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.policy import PolicyResolver, ToolPolicy, call_policy

RATE_LIMIT_META_KEY = "nexus/rateLimited"


@dataclass(frozen=True, slots=True)
class _Check:
    scope: str  # "tool", "server" or "caller"
    subject: str
    item: RateLimitItem
    rate: str


def describe(item: RateLimitItem) -> str:
    unit = item.GRANULARITY.name
    per = f"{item.multiples} {unit}s" if item.multiples != 1 else unit
    return f"{item.amount} per {per}"


class RateLimitStep:
    def __init__(
        self,
        policies: PolicyResolver,
        *,
        caller_limit: str | None = None,
        storage_uri: str = "async+memory://",
        limiter: Any = None,
    ) -> None:
        self.policies = policies
        self.caller_limit = caller_limit
        if limiter is None:  # e.g. stores/rate_windows.py's Redis limiter; else these windows
            storage: Any = storage_from_string(storage_uri)  # an async storage: the URI says "async+"
            limiter = MovingWindowRateLimiter(storage)
        self.limiter = limiter
        self._parsed: dict[str, RateLimitItem] = {}
        self.rejected: dict[str, int] = {}  # per tool: calls answered with the alert

    def _item(self, rate: str) -> RateLimitItem:
        item = self._parsed.get(rate)
        if item is None:
            item = self._parsed[rate] = parse(rate)
        return item

    def _checks(self, call: ToolCall) -> list[_Check]:
        policy = call_policy(call, self.policies)
        checks = []
        if policy is not None and policy.rate_limit:
            # A profile's own rate for the tool counts that profile's callers in a window of their own.
            window = call.name if "rate_limit" not in policy.profile_keys else f"{call.name}@{policy.profile}"
            checks.append(_Check("tool", window, self._item(policy.rate_limit), policy.rate_limit))
        if policy is not None and policy.server and policy.server_rate_limit:
            checks.append(
                _Check(
                    "server", policy.server, self._item(policy.server_rate_limit), policy.server_rate_limit
                )
            )
        if self.caller_limit:
            who = call.caller.identity  # the token's user when there is one (pipeline/call.py)
            checks.append(_Check("caller", who, self._item(self.caller_limit), self.caller_limit))
        return checks

    def applies_to(self, policy: ToolPolicy) -> bool:
        """Some window counts calls of this tool: its own, its server's, or the per-caller one.

        The per-caller limit is read from the policy as well as from this step: during a reload
        the policy (new settings) may name a limit before `caller_limit` is updated, or the
        other way round; either keeps the step in the chain.
        """
        return bool(
            policy.rate_limit
            or (policy.server and policy.server_rate_limit)
            or policy.caller_rate_limit
            or self.caller_limit
        )

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        if call.round is not None:
            return await call_next(call)  # a later round of a call already admitted (2026-07-28)
        checks = self._checks(call)
        if not checks:
            return await call_next(call)
        if len(checks) == 1:  # `hit` alone refuses without counting: one round trip to a shared store
            if not await self.limiter.hit(checks[0].item, checks[0].scope, checks[0].subject):
                return await self._refuse(call, checks[0])
            return await call_next(call)
        # Test every window before counting in any, so one refused call does not use up the others.
        for check in checks:
            if not await self.limiter.test(check.item, check.scope, check.subject):
                return await self._refuse(call, check)
        for check in checks:
            if not await self.limiter.hit(check.item, check.scope, check.subject):
                return await self._refuse(call, check)
        return await call_next(call)

    async def _refuse(self, call: ToolCall, check: _Check) -> types.CallToolResult:
        stats = await self.limiter.get_window_stats(check.item, check.scope, check.subject)
        wait = max(0.1, math.ceil((stats.reset_time - time.time()) * 10) / 10)
        self.rejected[call.name] = self.rejected.get(call.name, 0) + 1
        what = {
            "tool": f"tool {call.name}",
            "server": f"server {check.subject}",
            "caller": f"caller {check.subject}",
        }
        text = (
            f"SYSTEM_ALERT: Rate limit reached for {what[check.scope]} ({describe(check.item)}). "
            f"The call was not made. Wait {wait:g} seconds before calling it again."
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=True,
            _meta={RATE_LIMIT_META_KEY: {"scope": check.scope, "limit": check.rate, "retry_after": wait}},
        )
