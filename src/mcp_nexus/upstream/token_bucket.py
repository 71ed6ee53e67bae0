"""A token bucket: `burst` at once, refilled at `rate` a second (what a server's chatter may cost the log)."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self._clock = clock
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
        self._at = now

    def available(self) -> int:
        self._refill()
        return int(self.tokens)

    def take(self) -> bool:
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False
