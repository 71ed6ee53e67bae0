"""Tools the gateway itself provides (e.g. `python_sandbox`), listed next to the aggregated ones."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

LocalHandler = Callable[[dict[str, Any], Any], Awaitable[types.CallToolResult]]
"""`(arguments, caller)`: the caller (a pipeline `Caller`) says who asks, e.g. whose offloaded files it may read."""

ProgressLocalHandler = Callable[[dict[str, Any], Any, ProgressFnT | None], Awaitable[types.CallToolResult]]
"""`(arguments, caller, progress)`: for a tool that reports progress (e.g. nexus.run_goal, per step)."""


@dataclass(frozen=True, slots=True)
class LocalTool:
    tool: types.Tool
    handler: LocalHandler
    progress_handler: ProgressLocalHandler | None = None  # used instead of `handler` when set
    # The gateway sizes this tool's answers itself (find_tools): they are never offloaded, since
    # an alert in place of the answer would leave the model with nothing to act on.
    sized_by_gateway: bool = False

    @property
    def name(self) -> str:
        return self.tool.name
