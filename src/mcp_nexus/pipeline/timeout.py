"""Bounds each attempt of a call in time (per tool/server, default 30 s) and cancels it when late.

Cancelling the awaiting task makes the SDK abandon the request and tell the server
(`notifications/cancelled`). The caller gets JSON-RPC -32001 (ToolTimeoutError).
"""

from __future__ import annotations

import asyncio

from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.errors import ToolTimeoutError
from mcp_nexus.pipeline.policy import DEFAULT_TIMEOUT, PolicyResolver


class TimeoutStep:
    def __init__(self, policies: PolicyResolver) -> None:
        self.policies = policies

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        policy = self.policies.resolve(call.name)
        seconds = policy.timeout if policy is not None else DEFAULT_TIMEOUT
        call.notes["timeout"] = seconds  # the route passes it on as the SDK's read timeout
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await call_next(call)
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise ToolTimeoutError(
                f"tool {call.name} did not answer within {seconds:g} s; the call was cancelled",
                data={"tool": call.name, "timeout": seconds},
            ) from exc
