"""Tokens already validated, kept until they expire: a repeated token costs a dict lookup.

Why: an MCP client sends the same access token with every request until it refreshes it; a
signature check per request (tens of microseconds, docs/PERFORMANCE.md) buys nothing the
first one did not. Bounded (oldest entries go first) so tokens made up by a client cannot
grow it; an entry ends at the token's own expiry (plus the configured skew) at the latest.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp_nexus.identity.principal import Principal


class VerifiedTokens:
    def __init__(self, max_entries: int, *, clock: Callable[[], float] = time.time) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._entries: dict[str, tuple[Principal, float]] = {}

    def get(self, token: str) -> Principal | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        if self._clock() >= entry[1]:
            del self._entries[token]
            return None
        return entry[0]

    def put(self, token: str, principal: Principal, until: float) -> None:
        if self.max_entries <= 0:
            return
        if len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]  # the oldest insertion (dicts keep order)
        self._entries[token] = (principal, until)

    def __len__(self) -> int:
        return len(self._entries)
