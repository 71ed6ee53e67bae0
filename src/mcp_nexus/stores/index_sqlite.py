"""The tool index in sqlite: one row per tool, the snapshot's time in a small meta table.

Work runs in a thread (a save of ten thousand tools takes tens of milliseconds) with a
connection per operation, so the event loop never waits on the disk and no connection is
shared between threads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
from contextlib import closing
from pathlib import Path

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import INDEX_FORMAT_VERSION, IndexSnapshot
from mcp_nexus.catalog.index_store import IndexStoreError

logger = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS servers (position INTEGER NOT NULL, server_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS tools (
    server_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    tool_name TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    input_schema TEXT NOT NULL,
    tags TEXT NOT NULL,
    blocking INTEGER NOT NULL,
    cost_estimate TEXT NOT NULL,
    last_updated TEXT NOT NULL,
    annotations TEXT NOT NULL,
    PRIMARY KEY (server_id, tool_name)
);
"""

_COLUMNS = (
    "server_id, position, tool_name, name, description, input_schema, tags, blocking, "
    "cost_estimate, last_updated, annotations"
)


class SqliteIndexStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def location(self) -> str:
        return str(self.path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        connection = sqlite3.connect(self.path, timeout=10)
        connection.executescript(SCHEMA)
        return connection

    async def load(self) -> IndexSnapshot | None:
        if not self.path.exists():
            return None
        return await asyncio.to_thread(self._load)

    async def save(self, snapshot: IndexSnapshot) -> None:
        await asyncio.to_thread(self._save, snapshot)

    def _load(self) -> IndexSnapshot | None:
        try:
            with closing(self._connect()) as db:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
                if "last_sync" not in meta:
                    return None  # created but never saved
                servers: dict[str, list[IndexEntry]] = {
                    row[0]: [] for row in db.execute("SELECT server_id FROM servers ORDER BY position")
                }
                for row in db.execute(f"SELECT {_COLUMNS} FROM tools ORDER BY server_id, position"):
                    try:
                        entry = _entry(row)
                    except ValueError as exc:  # one bad entry costs that entry, never the whole index
                        logger.warning("tool index %s: entry skipped (server %r): %s", self.path, row[0], exc)
                        continue
                    servers.setdefault(row[0], []).append(entry)
        except (sqlite3.Error, ValueError) as exc:
            raise IndexStoreError(f"cannot read the tool index {self.path}: {exc}") from exc
        return IndexSnapshot(
            {server_id: tuple(entries) for server_id, entries in servers.items()},
            meta["last_sync"] or None,
            meta.get("version", INDEX_FORMAT_VERSION),
        )

    def _save(self, snapshot: IndexSnapshot) -> None:
        rows = [
            (
                entry.server_id,
                position,
                entry.tool_name,
                entry.name,
                entry.description,
                json.dumps(entry.input_schema, ensure_ascii=False),
                json.dumps(entry.tags, ensure_ascii=False),
                int(entry.blocking),
                entry.cost_estimate,
                entry.last_updated,
                json.dumps(entry.annotations, ensure_ascii=False),
            )
            for tools in snapshot.servers.values()
            for position, entry in enumerate(tools)
        ]
        try:
            with closing(self._connect()) as db, db:  # `with db`: one transaction, rolled back on error
                db.execute("DELETE FROM tools")
                db.execute("DELETE FROM servers")
                db.executemany(
                    "INSERT INTO servers (position, server_id) VALUES (?, ?)",
                    list(enumerate(snapshot.servers)),
                )
                db.executemany(f"INSERT INTO tools ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
                db.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [("last_sync", snapshot.last_sync or ""), ("version", snapshot.format_version)],
                )
            os.chmod(self.path, 0o600)
        except (sqlite3.Error, OSError) as exc:
            raise IndexStoreError(f"cannot save the tool index to {self.path}: {exc}") from exc


def _entry(row: tuple[object, ...]) -> IndexEntry:
    (
        server_id,
        _position,
        tool_name,
        name,
        description,
        schema,
        tags,
        blocking,
        cost,
        updated,
        annotations,
    ) = row
    return IndexEntry(
        server_id=str(server_id),
        tool_name=str(tool_name),
        name=str(name),
        description=str(description),
        input_schema=json.loads(str(schema)),
        tags=json.loads(str(tags)),
        blocking=bool(blocking),
        cost_estimate=str(cost),  # type: ignore[arg-type]  # validated by the model
        last_updated=str(updated),
        annotations=json.loads(str(annotations)),
    )
