"""The value that travels through the pipeline: one tools/call and who made it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT


@dataclass(frozen=True, slots=True)
class Caller:
    """Which frontend and client a call came from (for limits, logs and forwarding)."""

    frontend: str  # "stdio", "http", "xiaozhi", "api", "cli", "executor", ...
    client: str | None = None
    session: Any = None  # the downstream ServerSession, when server-initiated requests can reach it
    request_id: Any = None  # the downstream request id, to scope forwarded notifications to it
    capabilities: dict[str, Any] | None = None  # what the downstream client declared it can do
    modern: bool = False  # the downstream speaks 2026-07-28: input requests travel back as results


@dataclass(slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    caller: Caller
    progress: ProgressFnT | None = None
    meta: dict[str, Any] | None = None
    input_responses: dict[str, Any] | None = None  # a 2026-07-28 retry's answers to input requests
    request_state: str | None = None
    notes: dict[str, Any] = field(
        default_factory=dict
    )  # what steps learn on the way (server, cache hit, ...)


ToolOutcome = types.CallToolResult | types.InputRequiredResult
"""A call ends with the tool's result, or (2026-07-28 callers only) a request for more input."""

CallNext = Callable[[ToolCall], Awaitable[ToolOutcome]]


class Middleware(Protocol):
    """One step of the chain: may answer by itself or pass the call on."""

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome: ...
