"""Which tools one caller's tools/list shows: all of them, or (search mode) the gateway's own and the pinned.

In search mode a client sees `find_tools` and `call_tool` (and the gateway's other own tools,
such as `python_sandbox`, plus `gateway.tool_search.pinned`) and reaches everything else
through them. Callers in full mode never see the two search tools: their list is exactly the
aggregated one.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import mcp_types as types

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.config.tool_search import ToolSearchSettings

FIND_TOOLS = "find_tools"
CALL_TOOL = "call_tool"
SEARCH_TOOL_NAMES = frozenset({FIND_TOOLS, CALL_TOOL})


def in_search_mode(
    catalog: Catalog, settings: ToolSearchSettings, frontend: str | None, client: str | None
) -> bool:
    mode = settings.mode_for(frontend, client)
    if mode == "auto":
        aggregated = len(catalog.tools) - sum(1 for name in SEARCH_TOOL_NAMES if name in catalog.local_tools)
        return aggregated > settings.threshold
    return mode == "on" and all(name in catalog.local_tools for name in SEARCH_TOOL_NAMES)


def listed_tools(
    catalog: Catalog, settings: ToolSearchSettings, frontend: str | None, client: str | None
) -> list[types.Tool]:
    search_served = all(name in catalog.local_tools for name in SEARCH_TOOL_NAMES)
    if not search_served:
        return catalog.tool_list
    if not in_search_mode(catalog, settings, frontend, client):
        return [tool for tool in catalog.tool_list if tool.name not in SEARCH_TOOL_NAMES]
    pinned = settings.pinned
    return [
        entry.tool
        for name, entry in catalog.tools.items()
        if entry.local is not None or any(fnmatchcase(name, pattern) for pattern in pinned)
    ]
