"""The tool list one peer sees: filtered, renamed for it, serialised once, and cut into pages.

Rebuilt only when the catalog's tool list object changes (the catalog makes a new list on
every rebuild), so a tools/list or tools/call costs a dict lookup, not a re-serialisation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.names import is_allowed
from mcp_nexus.catalog.tool_listing import listed_tools
from mcp_nexus.config.schema_base import ToolFilter
from mcp_nexus.config.tool_search import ToolSearchSettings
from mcp_nexus.frontends.xiaozhi.names import ToolNameMap
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.profiles.resolve import Profiles

_PAGE_OVERHEAD = 64  # `{"tools":[...],"nextCursor":"<name>"}` around the items, name excluded


class UnknownCursorError(ValueError):
    """A cursor that names no listed tool (the list changed since the previous page)."""


def _peer_tool(tool: types.Tool, name: str) -> dict[str, Any]:
    # Name, description and schema only: what the endpoints read, and what keeps pages small.
    item: dict[str, Any] = {"name": name, "description": tool.description or ""}
    item["inputSchema"] = tool.input_schema or {"type": "object", "properties": {}}
    return item


@dataclass(frozen=True, slots=True)
class ToolSnapshot:
    names: ToolNameMap
    order: tuple[str, ...]  # the peer's names, in catalog order
    encoded: dict[str, str]  # peer name -> the tool's JSON
    items: dict[str, dict[str, Any]]

    def page(self, cursor: str | None, max_bytes: int) -> dict[str, Any]:
        """One tools/list result of at most `max_bytes` (a single larger tool still gets its own page)."""
        start = 0
        if cursor:
            try:
                start = self.order.index(cursor)
            except ValueError as exc:
                raise UnknownCursorError(
                    f"unknown cursor {cursor!r}: the tool list changed, list again without a cursor"
                ) from exc
        tools: list[dict[str, Any]] = []
        used = _PAGE_OVERHEAD
        index = start
        while index < len(self.order):
            name = self.order[index]
            size = len(self.encoded[name].encode("utf-8")) + 1
            if tools and used + size + len(name) > max_bytes:
                break
            tools.append(self.items[name])
            used += size
            index += 1
        result: dict[str, Any] = {"tools": tools}
        if index < len(self.order):
            result["nextCursor"] = self.order[
                index
            ]  # devices name the next tool; endpoints take it as opaque
        return result


class ToolView:
    """The gateway's tools as one peer kind sees them (allow/deny applied to the gateway's names)."""

    def __init__(
        self,
        catalog: Catalog,
        rules: ToolFilter,
        *,
        map_names: bool,
        search: Callable[[], ToolSearchSettings] | None = None,
        profiles: Profiles | None = None,
        profile: str | None = None,
    ) -> None:
        self.catalog = catalog
        # The profile this link's calls are in (its `profile`, else the rules of profiles/resolve.py):
        # only its tools are listed; the gateway refuses the others whatever the peer sends.
        self.profiles = profiles
        self.profile = profile
        self._caller = Caller("xiaozhi", profile=profile)
        self.rules = rules
        self.map_names = map_names
        self._search = search  # gateway.tool_search in force: search mode for the "xiaozhi" frontend
        self._source: list[types.Tool] | None = None
        self._settings: ToolSearchSettings | None = None
        self._snapshot: ToolSnapshot | None = None

    def snapshot(self) -> ToolSnapshot:
        source = self.catalog.tool_list
        settings = self._search() if self._search is not None else None
        if settings is not None and self.profiles is not None:
            settings = self.profiles.search_settings(self._caller, settings)
        if self._snapshot is None or source is not self._source or settings is not self._settings:
            listed = listed_tools(self.catalog, settings, "xiaozhi", None) if settings is not None else source
            if self.profiles is not None:
                listed = self.profiles.tools(self._caller, listed)
            self._snapshot = self._build(listed)
            self._source, self._settings = source, settings
        return self._snapshot

    def _build(self, source: list[types.Tool]) -> ToolSnapshot:
        tools = [tool for tool in source if is_allowed(tool.name, self.rules)]
        names = (
            ToolNameMap.build(t.name for t in tools)
            if self.map_names
            else ToolNameMap({t.name: t.name for t in tools}, {t.name: t.name for t in tools})
        )
        items = {names.to_exposed[t.name]: _peer_tool(t, names.to_exposed[t.name]) for t in tools}
        encoded = {
            name: json.dumps(item, ensure_ascii=False, separators=(",", ":")) for name, item in items.items()
        }
        return ToolSnapshot(names, tuple(items), encoded, items)

    def name_for(self, gateway_name: str) -> str | None:
        """The peer's name for a gateway tool, None when the filter hides it from the peer."""
        return self.snapshot().names.to_exposed.get(gateway_name)
