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


@dataclass(slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    caller: Caller
    progress: ProgressFnT | None = None
    meta: dict[str, Any] | None = None
    notes: dict[str, Any] = field(
        default_factory=dict
    )  # what steps learn on the way (server, cache hit, ...)


CallNext = Callable[[ToolCall], Awaitable[types.CallToolResult]]


class Middleware(Protocol):
    """One step of the chain: may answer by itself or pass the call on."""

    async def __call__(self, call: ToolCall, call_next: CallNext) -> types.CallToolResult: ...
