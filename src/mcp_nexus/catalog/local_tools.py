"""Tools the gateway itself provides (e.g. `python_sandbox`), listed next to the aggregated ones."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

LocalHandler = Callable[[dict[str, Any], Any], Awaitable[types.CallToolResult]]
"""`(arguments, caller)`: the caller (a pipeline `Caller`) says who asks, e.g. whose offloaded files it may read."""


@dataclass(frozen=True, slots=True)
class LocalTool:
    tool: types.Tool
    handler: LocalHandler

    @property
    def name(self) -> str:
        return self.tool.name
