"""`ToolSource`: the view of the tools the router chooses from, and its catalog implementation.

The router needs only the tools as the gateway lists them (namespaced names, because every
call goes back through `gateway.call_tool`), their server, description, input schema and
tags, a version that changes when the set changes (decision cache key) and, where it has
one, a search to narrow hundreds of tools down. `CatalogToolSource` reads the gateway's
live catalog (no tags); `IndexToolSource` reads the persisted ToolIndex (tags, search).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_entry import IndexEntry

LOCAL_SERVER_ID = "nexus"
"""The server id of the gateway's own tools (python_sandbox, nexus.*): what the pipeline records too."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    server_id: str
    tool_name: str  # as the gateway lists it (namespaced): what `gateway.call_tool` takes
    description: str
    input_schema: dict[str, Any]
    tags: tuple[str, ...] = field(default=())


@runtime_checkable
class ToolSource(Protocol):
    def tools(self) -> list[ToolInfo]: ...

    def version(self) -> str:
        """Changes whenever the tools (names, schemas, descriptions) change."""
        ...


@runtime_checkable
class SearchableToolSource(ToolSource, Protocol):
    def search(self, query: str, limit: int) -> list[ToolInfo]:
        """The `limit` tools most relevant to `query`, best first."""
        ...


class IndexToolSource:
    """The persisted tool index (tags, BM25 search) as a ToolSource, kept to what the gateway lists now.

    The index also remembers the tools of servers that are down (what they offered when they
    last answered); the router must not pick those, so every answer is filtered by the live
    catalog. The gateway's own tools (python_sandbox, ...) are not in the index: they come from
    the catalog, untagged.
    """

    def __init__(self, index: ToolIndex, catalog: Catalog) -> None:
        self.index = index
        self.catalog = catalog

    @staticmethod
    def info(entry: IndexEntry) -> ToolInfo:
        return ToolInfo(
            server_id=entry.server_id,
            tool_name=entry.name,  # the exposed (namespaced) name: what gateway.call_tool takes
            description=entry.description,
            input_schema=dict(entry.input_schema),
            tags=tuple(entry.tags),
        )

    def tools(self) -> list[ToolInfo]:
        live = self.catalog.tools
        indexed = [self.info(entry) for entry in self.index.get_all_tools() if entry.name in live]
        known = {tool.tool_name for tool in indexed}
        return indexed + [t for t in CatalogToolSource(self.catalog).tools() if t.tool_name not in known]

    def version(self) -> str:
        return f"{self.index.version}/{self.catalog.tools_signature}"

    def search(self, query: str, limit: int) -> list[ToolInfo]:
        live = self.catalog.tools
        # Ask for more than `limit`: hits of servers that are down are dropped below.
        hits = self.index.search(query, limit=limit * 2)
        return [self.info(entry) for entry in hits if entry.name in live][:limit]


class CatalogToolSource:
    """The tools the gateway lists right now, minus the control plane's own (a goal must not start goals)."""

    def __init__(self, catalog: Catalog, *, exclude: frozenset[str] = frozenset()) -> None:
        self.catalog = catalog
        self.exclude = exclude

    def tools(self) -> list[ToolInfo]:
        infos = []
        for name, entry in self.catalog.tools.items():
            if name in self.exclude:
                continue
            server = entry.candidates[0].upstream.name if entry.candidates else LOCAL_SERVER_ID
            infos.append(
                ToolInfo(
                    server_id=server,
                    tool_name=name,
                    description=entry.tool.description or "",
                    input_schema=dict(entry.tool.input_schema or {}),
                )
            )
        return infos

    def version(self) -> str:
        return self.catalog.tools_signature
