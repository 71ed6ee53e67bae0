"""A client's first list waits, bounded, for the servers still in their first start.

Why: a desktop client spawns `nexus serve --stdio`, initializes and lists at once; a client
that lists once and does not act on `list_changed` would otherwise never see the servers that
were still starting (only the built-ins are READY in the first second). Only the *first* start
of a server counts, only the first list of each kind per session waits, and never longer than
`gateway.first_list_wait`: a hung server holds no list past the bound, and later arrivals are
still announced with `list_changed`.
"""

from __future__ import annotations

import time
from collections.abc import MutableSet
from typing import Protocol


class StartingGateway(Protocol):
    """What the wait needs of the gateway (kept narrow: frontends only read it)."""

    started_at: float

    @property
    def first_starts_pending(self) -> bool: ...

    async def wait_first_starts(self, timeout: float) -> bool: ...


async def settle_first_list(
    gateway: StartingGateway, bound: float, kind: str, listed: MutableSet[str] | None
) -> bool:
    """Wait as a first list of `kind` should; True when no server is still in its first start.

    `listed`: the kinds this session has listed before (updated here). A stateless request
    (2026-07-28, no session) passes None and waits only within the first `bound` seconds
    after the gateway started, so a hung server cannot slow every later request.
    """
    if not gateway.first_starts_pending:
        return True
    if listed is None:
        bound -= time.time() - gateway.started_at
    elif kind in listed:
        bound = 0.0
    else:
        listed.add(kind)
    return await gateway.wait_first_starts(bound)
