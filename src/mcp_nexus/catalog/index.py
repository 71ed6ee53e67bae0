"""The tool index: a persisted snapshot of every server's tools, for the router, `find_tools` and operators.

The catalog is what is live now; the index is what the gateway knows, including what a server
offered when it last answered (so a plan can be made while a server restarts). It is filled
and saved by `IndexSync` (index_sync.py) under the controller design's rules; this class only
holds a snapshot and answers queries on it:

    get_all_tools() / get_tools_by_tag(tag) / get_server_by_tool(name) / get_tool_entry(name)
    search(query, tags=None, limit=10)        BM25, see index_search.py
    version                                   a hash of the contents: equal contents, equal version

Names: a query may use the exposed name (`robot.navigate_to`) or the server's own name
(`navigate_to`); when two servers share a bare name the higher-priority server's entry wins
(the snapshot keeps servers in priority order).

Chains (the config's composite tools, index_chains.py) are entries too, held beside the
snapshot (`set_chains`), never in it: the snapshot is what servers answered, and is what is
saved and exported. A chain takes its name from a server's tool as the catalog does (the
gateway's own tools shadow an upstream tool of the same exposed name), so that entry is left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_search import IndexSearch, Ranking
from mcp_nexus.catalog.index_snapshot import IndexSnapshot
from mcp_nexus.catalog.tags import Tagger

IndexSource = Literal["empty", "loading", "cache", "sync", "stale-cache"]
"""Where the index's contents came from: nothing yet; a saved snapshot still within its TTL;
a sync in which at least one server answered; a saved snapshot served because every server failed."""

ServerIndexState = Literal["synced", "cached", "failed"]


@dataclass
class ServerIndexStatus:
    state: ServerIndexState
    tools: int = 0
    error: str | None = None
    last_sync: str | None = None


@dataclass
class IndexStatus:
    source: IndexSource = "empty"
    stale: bool = False
    message: str = "no tool index yet"
    servers: dict[str, ServerIndexStatus] = field(default_factory=dict)
    syncs: int = 0  # full syncs done since start
    saved_to: str | None = None
    save_error: str | None = None


class ToolIndex:
    def __init__(self, snapshot: IndexSnapshot | None = None) -> None:
        self.status = IndexStatus()
        self._snapshot = IndexSnapshot()
        self._chains: tuple[IndexEntry, ...] = ()
        self._entries: list[IndexEntry] = []
        self._by_name: dict[str, IndexEntry] = {}
        self._version = ""
        self._search: IndexSearch | None = None
        self._ranking: Ranking = "hybrid"  # the sync sets tool_search.ranking
        self.tagger = Tagger()  # the sync sets the operator's rules: queries are tagged like tools
        self.set_snapshot(snapshot or IndexSnapshot())

    # -- contents ------------------------------------------------------------------------

    @property
    def snapshot(self) -> IndexSnapshot:
        return self._snapshot

    @property
    def version(self) -> str:
        """Changes exactly when the contents change (timestamps aside): e.g. a decision-cache key."""
        return self._version

    @property
    def last_sync(self) -> str | None:
        return self._snapshot.last_sync

    @property
    def ranking(self) -> Ranking:
        return self._ranking

    @ranking.setter
    def ranking(self, ranking: Ranking) -> None:
        if ranking != self._ranking:
            self._ranking = ranking
            self._search = None  # built again, the new way, on the next search

    @property
    def chains(self) -> tuple[IndexEntry, ...]:
        """The chains' entries (index_chains.py), in config order."""
        return self._chains

    def set_snapshot(self, snapshot: IndexSnapshot) -> None:
        self._snapshot = snapshot
        self._rebuild()

    def set_chains(self, entries: Sequence[IndexEntry]) -> None:
        """Serve exactly these chain entries beside the snapshot (a reload replaces them all)."""
        self._chains = tuple(entries)
        self._rebuild()

    def _rebuild(self) -> None:
        chain_names = {entry.name for entry in self._chains}
        served = [entry for entry in self._snapshot.entries() if entry.name not in chain_names]
        self._entries = [*served, *self._chains]
        by_name: dict[str, IndexEntry] = {}
        for entry in (*self._chains, *served):  # a chain keeps its name, as in the catalog; then
            by_name.setdefault(entry.name, entry)  # the first (highest-priority) server keeps a shared name
        for entry in self._entries:
            by_name.setdefault(entry.tool_name, entry)
        self._by_name = by_name
        version = _content_version(self._entries)
        if version != self._version:
            self._search = None
        self._version = version

    # -- the design's queries ---------------------------------------------------------------

    def get_all_tools(self) -> list[IndexEntry]:
        return list(self._entries)

    def get_tools_by_tag(self, tag: str) -> list[IndexEntry]:
        return [entry for entry in self._entries if tag in entry.tags]

    def get_server_by_tool(self, tool_name: str) -> str | None:
        entry = self._by_name.get(tool_name)
        return entry.server_id if entry is not None else None

    def get_tool_entry(self, tool_name: str) -> IndexEntry | None:
        return self._by_name.get(tool_name)

    def search(self, query: str, tags: Sequence[str] | None = None, limit: int = 10) -> list[IndexEntry]:
        if self._search is None:
            self._search = IndexSearch(self._entries, self._ranking)
        return self._search.search(query, tags, limit, self.tagger.tags_for("", query or ""))

    def tags(self) -> dict[str, int]:
        """Every tag in use, with how many tools carry it."""
        counts: dict[str, int] = {}
        for entry in self._entries:
            for tag in entry.tags:
                counts[tag] = counts.get(tag, 0) + 1
        return dict(sorted(counts.items()))

    # -- for operators -------------------------------------------------------------------------

    def describe(self, ttl_seconds: float | None = None) -> dict[str, Any]:
        """The status the admin API and `nexus index status` show."""
        status = self.status
        age = self._snapshot.age_seconds()
        return {
            "source": status.source,
            "stale": status.stale,
            "message": status.message,
            "version": self._version,
            "last_sync": self._snapshot.last_sync,
            "age_seconds": None if age is None else round(age, 1),
            "ttl_seconds": ttl_seconds,
            "tools": len(self._entries),  # the chains' entries included
            "chains": len(self._chains),
            "tags": self.tags(),
            "syncs": status.syncs,
            "saved_to": status.saved_to,
            "save_error": status.save_error,
            "servers": [
                {
                    "server_id": server_id,
                    "state": server.state,
                    "tools": server.tools,
                    "error": server.error,
                    "last_sync": server.last_sync,
                }
                for server_id, server in status.servers.items()
            ],
        }


def _content_version(entries: list[IndexEntry]) -> str:
    digest = hashlib.sha256()
    for entry in entries:
        digest.update(entry.digest.encode())
    return digest.hexdigest()[:16]
