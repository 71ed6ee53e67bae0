"""How an upstream's own requests (sampling, elicitation, roots) and log messages reach a caller.

The protocol gives no link from such a request back to the call that caused it, so it
goes to the newest caller with a call in flight on that server that can answer it: a
handshake-era client over its back-channel, or a 2026-07-28 client whose call is held
(pipeline/held_calls.py), as an input request of its next round. A caller that cannot (the
CLI, the admin API, Xiaozhi, a client that declared no such capability) gets a clear refusal
the server can act on.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from mcp_nexus.pipeline.call import Caller, DownstreamPeer, ToolCall
from mcp_nexus.upstream.downstream_relay import NoRelay, RelayedServer
from mcp_nexus.upstream.input_required import InputAnswerer

logger = logging.getLogger(__name__)

ResultT = TypeVar("ResultT", bound=BaseModel)


def _peer_of(callers: list[Any]) -> DownstreamPeer | None:
    for caller in reversed(callers):
        peer = caller.peer
        if peer is not None and peer.can_send_request:
            return peer  # type: ignore[no-any-return]
    return None


async def _ask(peer: DownstreamPeer, request: Any, result_type: type[ResultT]) -> ResultT | types.ErrorData:
    try:
        return await peer.send_request(request, result_type)
    except MCPError as exc:
        return exc.error


class CallerRelay(NoRelay):
    """The gateway's `DownstreamRelay`: sends each upstream request to the caller in flight there."""

    async def log(self, upstream: RelayedServer, params: types.LoggingMessageNotificationParams) -> None:
        # The gateway's own log has it already (upstream/log_records.py, bounded per server).
        callers = upstream.active_callers  # a session's view builds this list: read it once
        if not callers:
            return
        caller = callers[-1]
        if caller.peer is None:
            return
        try:
            await caller.peer.send_log_message(
                params.level, params.data, params.logger, related_request_id=caller.request_id
            )
        except Exception as exc:  # the caller may be gone; a log line is never worth an error
            logger.debug("could not relay a log message from %s: %s", upstream.name, exc)

    async def sampling(self, upstream: RelayedServer, params: types.CreateMessageRequestParams) -> Any:
        peer = _peer_of(upstream.active_callers)
        if peer is None:
            return await super().sampling(upstream, params)
        return await _ask(peer, types.CreateMessageRequest(params=params), types.CreateMessageResult)

    async def elicitation(self, upstream: RelayedServer, params: types.ElicitRequestParams) -> Any:
        peer = _peer_of(upstream.active_callers)
        if peer is None:
            return await super().elicitation(upstream, params)
        return await _ask(peer, types.ElicitRequest(params=params), types.ElicitResult)

    async def list_roots(self, upstream: RelayedServer) -> Any:
        peer = _peer_of(upstream.active_callers)
        if peer is None:
            return await super().list_roots(upstream)
        return await _ask(peer, types.ListRootsRequest(), types.ListRootsResult)


def input_answerer(call: ToolCall) -> InputAnswerer | None:
    """For a caller that cannot take a 2026-07-28 `InputRequiredResult` back: ask it ourselves.

    A handshake-era caller with a back-channel is asked each question as a server-to-client
    request; any other caller declines (the server then says what it needed).
    """
    caller: Caller = call.caller
    if caller.modern:
        return None
    peer = caller.peer if caller.peer is not None and caller.peer.can_send_request else None

    async def answer(request: types.InputRequest) -> Any:
        if peer is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"the caller ({caller.frontend}) cannot answer {request.method} requests",
            )
        result_types: dict[str, type[BaseModel]] = {
            "sampling/createMessage": types.CreateMessageResult,
            "elicitation/create": types.ElicitResult,
            "roots/list": types.ListRootsResult,
        }
        return await _ask(peer, request, result_types.get(request.method, types.EmptyResult))

    return answer
