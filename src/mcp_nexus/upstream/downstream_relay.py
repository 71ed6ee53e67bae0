"""The contract for a server's own requests (sampling, elicitation, roots) and log messages going back down.

An upstream server may ask its client something mid-call. The upstream side only asks; the
gateway answers, because only it knows which caller has a call in flight there (relay.py,
`CallerRelay`). This contract sits below both so that neither imports the other: a relay is
handed the server as a `RelayedServer` (its name and callers in flight), never as `Upstream`.
"""

from __future__ import annotations

from typing import Any, Protocol

import mcp_types as types


class RelayedServer(Protocol):
    """What a relay may know of the server that asks: enough to find the caller to ask."""

    @property
    def name(self) -> str: ...

    @property
    def active_callers(self) -> list[Any]:
        """Callers of the calls in flight on that server, newest last."""
        ...


class DownstreamRelay(Protocol):
    """Where an upstream's own requests and log messages go: the caller whose call is in flight there.

    Implemented by the gateway (it knows the callers); the upstream layer only asks.
    """

    async def sampling(
        self, upstream: RelayedServer, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData: ...

    async def elicitation(
        self, upstream: RelayedServer, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData: ...

    async def list_roots(self, upstream: RelayedServer) -> types.ListRootsResult | types.ErrorData: ...

    async def log(self, upstream: RelayedServer, params: types.LoggingMessageNotificationParams) -> None: ...


class NoRelay:
    """Used until a gateway installs its relay: decline what needs a client."""

    async def sampling(self, upstream: RelayedServer, params: Any) -> types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_REQUEST, message="no client connected that supports sampling"
        )

    async def elicitation(self, upstream: RelayedServer, params: Any) -> types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_REQUEST, message="no client connected that supports elicitation"
        )

    async def list_roots(self, upstream: RelayedServer) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[])

    async def log(self, upstream: RelayedServer, params: types.LoggingMessageNotificationParams) -> None:
        return  # no caller to pass it to; the gateway's own log has it (log_records.py)
