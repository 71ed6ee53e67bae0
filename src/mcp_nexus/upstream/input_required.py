"""Answering a 2026-07-28 `InputRequiredResult` for a caller that cannot take it back (SEP-2322).

A handshake-era caller, the CLI or the Xiaozhi bridge expects a final result: the gateway
asks each embedded question through `answer` (which relays it to the caller as a
server-to-client request, or declines), then retries the call with the answers and the
server's opaque `requestState`, until the server returns a final result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

ResultT = TypeVar("ResultT")

InputAnswerer = Callable[[types.InputRequest], Awaitable[Any]]
"""Answers one embedded request (sampling, elicitation, roots): a result model, or ErrorData to decline."""

MAX_ROUNDS = 8
_STATE_ONLY_DELAY_S = 0.05


async def drive_input_required(
    first: types.InputRequiredResult,
    retry: Callable[[dict[str, Any] | None, str | None], Awaitable[ResultT | types.InputRequiredResult]],
    answer: InputAnswerer,
) -> ResultT:
    current: ResultT | types.InputRequiredResult = first
    for _ in range(MAX_ROUNDS):
        if not isinstance(current, types.InputRequiredResult):
            return current
        responses: dict[str, Any] | None = None
        if current.input_requests:
            keys = list(current.input_requests)
            answers = await asyncio.gather(*(answer(current.input_requests[key]) for key in keys))
            for value in answers:
                if isinstance(value, types.ErrorData):
                    raise MCPError.from_error_data(value)
            responses = dict(zip(keys, answers, strict=True))
        else:
            await asyncio.sleep(_STATE_ONLY_DELAY_S)  # the server only asked to be asked again
        current = await retry(responses, current.request_state)
    if isinstance(current, types.InputRequiredResult):
        raise MCPError(types.INTERNAL_ERROR, f"the server kept asking for input after {MAX_ROUNDS} rounds")
    return current
