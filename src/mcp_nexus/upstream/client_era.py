"""The era of the one client a `nexus serve --stdio` gateway serves, for its stdio servers to follow.

With `protocol: auto`, a stdio server speaks the era of the gateway's client when the gateway
serves exactly one (its stdio frontend): a handshake-era client (today's IDEs) gets upstream
sessions in the handshake era, a 2026-07-28 client gets 2026-07-28 ones. Why: an SDK 2.x
server spends 0.3-0.4 ms more per call on its 2026-07-28 request path (docs/PERFORMANCE.md),
which a handshake-era client gains nothing from; and a session in the client's own era carries
everything the client can take (its back-channel, or input requests as results) with no second
process beside it. A server that has no such era gets the other one (negotiate.py).

Every other gateway (HTTP, many clients of both eras; the CLI's one-shot gateways; tests that
build one in process) is told nothing, and its servers get 2026-07-28 when offered. The era is
known from the client's first request, which a client sends as soon as it has spawned the
gateway: a server's connect waits for it at most FOLLOW_WAIT_S, then takes 2026-07-28.
"""

from __future__ import annotations

import asyncio
import contextlib

from mcp_nexus.upstream.negotiate import Era

FOLLOW_WAIT_S = 1.0
"""How long a server's first connect waits for the client's first request (a client that
spawned us and says nothing is not waited for longer: its servers speak 2026-07-28)."""


class ClientEra:
    def __init__(self) -> None:
        self._known: asyncio.Future[Era] | None = None  # set while one client is expected

    def expect(self) -> None:
        """This gateway serves one client over stdio: its servers wait to hear its era."""
        if self._known is None:
            self._known = asyncio.get_running_loop().create_future()

    def tell(self, *, modern: bool) -> None:
        """The client's first request showed its era."""
        known = self._known
        if known is not None and not known.done():
            known.set_result("latest" if modern else "handshake")

    async def era(self) -> Era | None:
        """The client's era ("handshake" or "latest"), or None when there is no one client to follow."""
        known = self._known
        if known is None:
            return None
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(asyncio.shield(known), FOLLOW_WAIT_S)
        return None
