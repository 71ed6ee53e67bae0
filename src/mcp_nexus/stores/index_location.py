"""Where the tool index is saved, and which store a file name asks for.

sqlite by default (`<data dir>/index/tool_index.sqlite3`): one transaction per save, so a crash
mid-save leaves the previous snapshot. A path ending in `.json` keeps the controller design's
cache file instead (the same document `nexus index export` writes).
"""

from __future__ import annotations

from pathlib import Path

from mcp_nexus.catalog.index_store import IndexStore
from mcp_nexus.paths import data_subdir
from mcp_nexus.stores.index_json import JsonIndexStore
from mcp_nexus.stores.index_sqlite import SqliteIndexStore

DEFAULT_INDEX_FILE = "tool_index.sqlite3"


def default_index_path() -> Path:
    return data_subdir("index") / DEFAULT_INDEX_FILE


def open_index_store(path: str | Path | None = None) -> IndexStore:
    """The store for `gateway.index.path` (None: the default sqlite file in the data folder)."""
    chosen = Path(path).expanduser() if path else default_index_path()
    if chosen.suffix.lower() == ".json":
        return JsonIndexStore(chosen)
    return SqliteIndexStore(chosen)
