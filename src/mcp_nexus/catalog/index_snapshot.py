"""A whole tool index at one moment, and its file format (the controller design's cache file):

    {"version": "1.0.0", "last_sync": "2026-01-07T10:00:00Z",
     "servers": [{"server_id": "ros2_mcp", "tools": [{"tool_name": "navigate_to", ...}]}]}

Each tool carries the design's keys (tool_name, description, input_schema, tags, blocking,
cost_estimate, last_updated) plus Nexus's `name` (as exposed) and `annotations`. A file from
the design, without those two, still imports: `name` becomes `<server_id>.<tool_name>`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from mcp_nexus.catalog.index_entry import IndexEntry

logger = logging.getLogger(__name__)

INDEX_FORMAT_VERSION = "1.0.0"

Namer = Callable[[str, str], str]
"""(server_id, tool_name) -> the exposed name, for imported tools that do not say it."""


def default_namer(server_id: str, tool_name: str) -> str:
    return f"{server_id}.{tool_name}"


def utc_now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_iso(value: str | None) -> dt.datetime | None:
    """An ISO time (a trailing Z too) as an aware datetime; None when absent or unreadable."""
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


class IndexFormatError(ValueError):
    """A document that is not an index file; the message names where (e.g. `servers[0].tools[2].blocking`)."""


@dataclass(frozen=True)
class IndexSnapshot:
    servers: Mapping[str, tuple[IndexEntry, ...]] = field(default_factory=dict)
    last_sync: str | None = None
    format_version: str = INDEX_FORMAT_VERSION

    def entries(self) -> Iterator[IndexEntry]:
        for tools in self.servers.values():
            yield from tools

    @property
    def tool_count(self) -> int:
        return sum(len(tools) for tools in self.servers.values())

    @property
    def has_tools(self) -> bool:
        return self.tool_count > 0

    def age_seconds(self, now: dt.datetime | None = None) -> float | None:
        synced = parse_iso(self.last_sync)
        if synced is None:
            return None
        return ((now or dt.datetime.now(dt.UTC)) - synced).total_seconds()

    def to_document(self) -> dict[str, Any]:
        return {
            "version": self.format_version,
            "last_sync": self.last_sync,
            "servers": [
                {
                    "server_id": server_id,
                    "tools": [entry.model_dump(mode="json", exclude={"server_id"}) for entry in tools],
                }
                for server_id, tools in self.servers.items()
            ],
        }

    @classmethod
    def from_document(
        cls,
        doc: Any,
        namer: Namer = default_namer,
        *,
        skip_bad_entries: bool = False,
        skip_bad_names: bool = False,
        skipped: list[str] | None = None,
    ) -> IndexSnapshot:
        """The snapshot a document describes; IndexFormatError names the first place that is wrong.

        `skip_bad_entries` (loading what was saved): a tool entry that is wrong is left out with a
        warning instead, so one bad entry never costs the whole saved index. `skip_bad_names` (an
        import): only an entry whose name the catalog would refuse (it could never be served) is
        left out; any other mistake still fails the import. `skipped` collects why each was left out.
        """
        if not isinstance(doc, dict):
            raise IndexFormatError(f"an index file is a JSON object, got {type(doc).__name__}")
        version = doc.get("version", INDEX_FORMAT_VERSION)
        if not isinstance(version, str):
            raise IndexFormatError(
                f"version: expected a string such as {INDEX_FORMAT_VERSION!r}, got {version!r}"
            )
        last_sync = doc.get("last_sync")
        if last_sync is not None and not isinstance(last_sync, str):
            raise IndexFormatError(f"last_sync: expected an ISO 8601 time as a string, got {last_sync!r}")
        # An unreadable time is kept as written: the snapshot then counts as expired (age unknown).
        servers_doc = doc.get("servers")
        if not isinstance(servers_doc, list):
            raise IndexFormatError("servers: expected a list of {server_id, tools}")
        servers: dict[str, tuple[IndexEntry, ...]] = {}
        for i, server in enumerate(servers_doc):
            where = f"servers[{i}]"
            if not isinstance(server, dict):
                raise IndexFormatError(f"{where}: expected an object with server_id and tools")
            server_id = server.get("server_id")
            if not isinstance(server_id, str) or not server_id:
                raise IndexFormatError(f"{where}.server_id: expected a non-empty string, got {server_id!r}")
            tools = server.get("tools", [])
            if not isinstance(tools, list):
                raise IndexFormatError(f"{where}.tools: expected a list of tools")
            # A server or tool named twice: the later one wins (as a dict update would).
            by_name = {entry.tool_name: entry for entry in servers.get(server_id, ())}
            for j, tool in enumerate(tools):
                try:
                    entry = _entry(tool, server_id, f"{where}.tools[{j}]", last_sync, namer)
                except IndexFormatError as exc:
                    if not (skip_bad_entries or (skip_bad_names and isinstance(exc, UnservableNameError))):
                        raise
                    logger.warning("tool index: entry skipped: %s", exc)
                    if skipped is not None:
                        skipped.append(str(exc))
                    continue
                by_name[entry.tool_name] = entry
            servers[server_id] = tuple(by_name.values())
        return cls(servers, last_sync, version)


def _entry(tool: Any, server_id: str, where: str, last_sync: str | None, namer: Namer) -> IndexEntry:
    if not isinstance(tool, dict):
        raise IndexFormatError(f"{where}: expected an object, got {type(tool).__name__}")
    data = {**tool, "server_id": server_id}
    tool_name = data.get("tool_name")
    if isinstance(tool_name, str) and tool_name:
        data.setdefault("name", namer(server_id, tool_name))
    if not data.get("last_updated"):
        data["last_updated"] = last_sync or ""
    try:
        return IndexEntry.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(part) for part in first["loc"])
        if first["type"] == "missing":
            raise IndexFormatError(f"{where}.{path}: required field is missing") from exc
        shown = repr(first.get("input"))
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        # A non-empty name the catalog refuses (control or format characters, too long) may be
        # skipped by an import; an empty or mistyped one means a broken document.
        # Only when the names are all that is wrong: an entry wrong in any other way is a broken document.
        unservable = all(
            error["type"] == "value_error"
            and error["loc"] in (("tool_name",), ("name",))
            and isinstance(error.get("input"), str)
            and bool(error.get("input"))
            for error in exc.errors()
        )
        kind = UnservableNameError if unservable else IndexFormatError
        raise kind(f"{where}.{path}: {first['msg']} (got {shown})") from exc


class UnservableNameError(IndexFormatError):
    """An entry whose name the catalog refuses (tool_names.py): it could never be listed or called."""
