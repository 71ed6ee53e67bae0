"""`ToolSource`: the view of the tools the router chooses from, and its catalog implementation.

The router needs only the tools as the gateway lists them (namespaced names, because every
call goes back through `gateway.call_tool`), their server, description, input schema and
tags, a version that changes when the set changes (decision cache key) and, where it has
one, a search to narrow hundreds of tools down. `CatalogToolSource` reads the gateway's
live catalog (no tags); the persisted ToolIndex can implement the same protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mcp_nexus.catalog.catalog import Catalog

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
    """Any tool index with `get_all_tools()` (entries with server_id, a namespaced name, description,
    input_schema, tags) and optionally `search(query, limit)`, as a ToolSource.

    The name the gateway lists is taken from the entry's `namespaced_name` or `exposed_name` when it
    has one (the index may keep the upstream's own `tool_name` beside it), else `tool_name`.
    """

    def __init__(self, index: Any) -> None:
        self.index = index

    @staticmethod
    def info(entry: Any) -> ToolInfo:
        name = (
            getattr(entry, "namespaced_name", None) or getattr(entry, "exposed_name", None) or entry.tool_name
        )
        return ToolInfo(
            server_id=entry.server_id,
            tool_name=name,
            description=entry.description or "",
            input_schema=dict(entry.input_schema or {}),
            tags=tuple(getattr(entry, "tags", ()) or ()),
        )

    def tools(self) -> list[ToolInfo]:
        return [self.info(entry) for entry in self.index.get_all_tools()]

    def version(self) -> str:
        known = getattr(self.index, "version", None) or getattr(self.index, "last_sync", None)
        value = known() if callable(known) else known
        if value:
            return str(value)
        return str(hash(tuple((t.tool_name, t.description) for t in self.tools())))

    def search(self, query: str, limit: int) -> list[ToolInfo]:
        search = getattr(self.index, "search", None)
        if search is None:
            return []
        hits = search(query, limit=limit)
        return [self.info(getattr(hit, "entry", hit)) for hit in hits]


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
