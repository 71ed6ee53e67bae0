"""Bounds each attempt of a call in time (per tool/server, default 30 s) and cancels it when late.

The per-server deadline is enforced by the route, one candidate at a time, so a server that
times out hands the call to the next candidate by priority (the upstream request is
cancelled: `notifications/cancelled`). This step sets that deadline; for the gateway's own
tools and for unknown names (which may wait for a server still connecting) it also keeps
an outer deadline of its own. The caller gets JSON-RPC -32001 (ToolTimeoutError).
Requests other than tools/call (resources, prompts, completions) get the server's
`timeouts.call` per candidate and the gateway default overall.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp_nexus.errors import ToolTimeoutError
from mcp_nexus.pipeline.call import CallNext, ToolCall
from mcp_nexus.pipeline.policy import DEFAULT_TIMEOUT, PolicyResolver, call_policy


class TimeoutStep:
    def __init__(self, policies: PolicyResolver) -> None:
        self.policies = policies

    async def __call__(self, call: ToolCall, call_next: CallNext) -> Any:
        seconds = DEFAULT_TIMEOUT
        if call.method == "tools/call":
            policy = call_policy(call, self.policies)
            if policy is not None:
                seconds = policy.timeout
            entry = self.policies.catalog.tools.get(call.name)
            if entry is not None and entry.candidates:
                call.timeout = seconds
                call.candidate_timeouts = self.policies.candidate_timeouts(entry)
                if policy is not None and "timeout" in policy.profile_keys:
                    # The caller's profile names this tool's timeout: every candidate gets it.
                    call.candidate_timeouts = dict.fromkeys(call.candidate_timeouts, seconds)
                # Each candidate's request carries its own deadline (the session's timer fails it
                # and cancels it upstream): a second timer over them would only cost time on the
                # hot path. Local tools and other requests keep the safety net below.
                return await call_next(call)
        call.timeout = seconds
        # The safety net: every candidate may use its full time, plus a moment to hand over.
        deadline = asyncio.timeout((sum(call.candidate_timeouts.values()) or seconds) + 1.0)
        try:
            async with deadline:
                return await call_next(call)
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise ToolTimeoutError(
                f"{call.name} did not answer within {seconds:g} s; the call was cancelled",
                data={"tool": call.name, "timeout": seconds},
            ) from exc
