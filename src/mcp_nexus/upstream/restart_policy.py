"""When to try bringing a failed server back: exponential backoff with jitter, and when to give up."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from mcp_nexus.config.schema import RestartPolicy

_JITTER = 0.2  # +-20 %: servers that failed together do not all come back in the same instant


@dataclass
class RestartBudget:
    """Counts the attempts of one server since it was last healthy for a while.

    Attempt n waits `backoff_min * 2**(n-1)` seconds (jittered, capped at `backoff_max`);
    the count starts over once the server has stayed READY for `reset_after` seconds.
    """

    policy: RestartPolicy
    attempts: int = 0
    ready_at: float | None = None  # monotonic time the server last became READY
    rng: random.Random = field(default_factory=random.Random)

    def on_ready(self) -> None:
        self.ready_at = time.monotonic()

    def on_failure(self) -> None:
        """A crash or a failed attempt: forget the attempts if the last READY period was long enough."""
        if self.ready_at is not None and time.monotonic() - self.ready_at >= self.policy.reset_after:
            self.attempts = 0
        self.ready_at = None

    def exhausted(self) -> bool:
        limit = self.policy.max_attempts
        return limit > 0 and self.attempts >= limit

    def next_delay(self) -> float:
        """Count one more attempt and return how long to wait before it."""
        self.attempts += 1
        base = self.policy.backoff_min * 2 ** min(self.attempts - 1, 30)
        jittered = base * self.rng.uniform(1 - _JITTER, 1 + _JITTER)
        return float(min(self.policy.backoff_max, jittered))

    def reset(self) -> None:
        self.attempts = 0
        self.ready_at = None
