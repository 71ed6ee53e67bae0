"""Retries transport failures and timeouts, with exponential backoff, for idempotent tools only.

A tool qualifies when its config says `idempotent: true`, or (unless the config says
`idempotent: false`) its annotations carry `readOnlyHint` or `idempotentHint`. Anything
else is tried once: repeating a call that may have had an effect is the caller's decision.
Delays: `retry_backoff` seconds (default 2), doubling (2 s, then 4 s); `retries` (default 2).
"""

from __future__ import annotations

import asyncio
import logging

from mcp_nexus.errors import ToolTimeoutError, UnavailableError
from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.policy import PolicyResolver, ToolPolicy, call_policy

logger = logging.getLogger(__name__)

RETRYABLE = (ToolTimeoutError, UnavailableError)


class RetryStep:
    def __init__(self, policies: PolicyResolver, *, backoff: float = 2.0) -> None:
        self.policies = policies
        self.backoff = backoff

    def applies_to(self, policy: ToolPolicy) -> bool:
        """Only an idempotent tool with retries is ever called again."""
        return policy.retries > 0 and policy.idempotent

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        policy = call_policy(call, self.policies)
        if policy is None or policy.retries <= 0 or not policy.idempotent:
            return await call_next(call)
        attempt = 0
        while True:
            try:
                return await call_next(call)
            except RETRYABLE as exc:
                if attempt >= policy.retries:
                    exc.data["attempts"] = attempt + 1
                    raise
                delay = self.backoff * (2**attempt)
                attempt += 1
                call.retries = attempt
                logger.info(
                    "tool %s: %s; retry %d of %d in %g s",
                    call.name,
                    exc.message,
                    attempt,
                    policy.retries,
                    delay,
                )
                await asyncio.sleep(delay)
