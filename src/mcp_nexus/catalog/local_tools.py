"""Tools the gateway itself provides (e.g. `python_sandbox`), listed next to the aggregated ones."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from mcp_nexus.config.schema import CallPolicy

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
    # The tool's own governance level (cache_ttl, rate_limit, timeout, ...), as a server's
    # tool_config entry is for its tools: a chain's `tool_config` (docs/CHAINS.md).
    policy: CallPolicy | None = None
    # What the admin API and the dashboard show of it beyond the tool itself (a chain's steps).
    details: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.tool.name
