"""The tool index on disk: sqlite (default) and the design's JSON file; import/export of the design's document."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexFormatError, IndexSnapshot
from mcp_nexus.catalog.index_store import IndexStoreError
from mcp_nexus.stores.index_json import JsonIndexStore
from mcp_nexus.stores.index_location import default_index_path, open_index_store
from mcp_nexus.stores.index_sqlite import SqliteIndexStore

# The controller design's cache file, exactly as its document shows it (section 3.3).
DESIGN_DOCUMENT = {
    "version": "1.0.0",
    "last_sync": "2026-01-07T10:00:00Z",
    "servers": [
        {
            "server_id": "ros2_mcp",
            "tools": [
                {
                    "tool_name": "navigate_to",
                    "description": "Navigate robot to target position",
                    "input_schema": {"x": "float", "y": "float"},
                    "tags": ["navigation", "robot"],
                    "blocking": True,
                    "cost_estimate": "high",
                }
            ],
        }
    ],
}


def _snapshot() -> IndexSnapshot:
    def entry(server: str, tool: str, **extra: object) -> IndexEntry:
        return IndexEntry.model_validate(
            {
                "server_id": server,
                "tool_name": tool,
                "name": f"{server}.{tool}",
                "description": f"{tool} 的说明",
                "input_schema": {"type": "object", "properties": {"x": {"type": "number"}}},
                "last_updated": "2026-11-25T10:00:00Z",
                **extra,
            }
        )

    return IndexSnapshot(
        {
            "robot": (
                entry("robot", "navigate_to", tags=["navigation"], blocking=True, cost_estimate="high"),
                entry("robot", "battery", annotations={"readOnlyHint": True}, tags=["read-only"]),
            ),
            "home": (entry("home", "set_light", cost_estimate="medium"),),
            "empty": (),
        },
        "2026-11-25T10:00:00Z",
    )


@pytest.mark.parametrize("suffix", [".sqlite3", ".json"])
async def test_a_saved_snapshot_loads_back_equal(tmp_path: Path, suffix: str) -> None:
    store = open_index_store(tmp_path / "sub" / f"index{suffix}")
    assert await store.load() is None
    saved = _snapshot()
    await store.save(saved)
    loaded = await store.load()
    assert loaded == saved
    assert list(loaded.servers) == ["robot", "home", "empty"]  # server order (priority) is kept
    assert ToolIndex(loaded).version == ToolIndex(saved).version
    assert (tmp_path / "sub" / f"index{suffix}").stat().st_mode & 0o777 == 0o600


async def test_a_second_save_replaces_the_first_entirely(tmp_path: Path) -> None:
    store = SqliteIndexStore(tmp_path / "i.sqlite3")
    await store.save(_snapshot())
    smaller = IndexSnapshot({"home": _snapshot().servers["home"]}, "2026-11-25T11:00:00Z")
    await store.save(smaller)
    assert await store.load() == smaller


async def test_the_default_store_is_sqlite_in_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    assert default_index_path() == tmp_path / "data" / "index" / "tool_index.sqlite3"
    store = open_index_store(None)
    assert isinstance(store, SqliteIndexStore)
    await store.save(_snapshot())
    with sqlite3.connect(default_index_path()) as db:
        assert db.execute("SELECT count(*) FROM tools").fetchone() == (3,)
    assert isinstance(open_index_store(str(tmp_path / "cache.JSON")), JsonIndexStore)


async def test_an_unreadable_file_is_an_error_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "index.sqlite3"
    broken.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(IndexStoreError, match=r"cannot read the tool index .*index\.sqlite3"):
        await SqliteIndexStore(broken).load()
    garbled = tmp_path / "index.json"
    garbled.write_text('{"servers": 3}')
    with pytest.raises(IndexStoreError, match="servers: expected a list"):
        await JsonIndexStore(garbled).load()


def test_the_design_document_imports_and_exports_in_its_own_shape() -> None:
    snapshot = IndexSnapshot.from_document(DESIGN_DOCUMENT)
    index = ToolIndex(snapshot)
    entry = index.get_tool_entry("navigate_to")
    assert entry is not None and entry.name == "ros2_mcp.navigate_to"
    assert (entry.server_id, entry.blocking, entry.cost_estimate) == ("ros2_mcp", True, "high")
    assert entry.last_updated == "2026-01-07T10:00:00Z"  # absent in the file: the snapshot's time
    assert index.get_server_by_tool("navigate_to") == "ros2_mcp"
    assert index.get_server_by_tool("ros2_mcp.navigate_to") == "ros2_mcp"
    assert [e.tool_name for e in index.get_tools_by_tag("navigation")] == ["navigate_to"]
    document = snapshot.to_document()
    assert set(document) == {"version", "last_sync", "servers"}
    tool = document["servers"][0]["tools"][0]
    for key, value in DESIGN_DOCUMENT["servers"][0]["tools"][0].items():  # type: ignore[index]
        assert tool[key] == value
    assert {"last_updated", "annotations", "name"} <= set(tool) and "server_id" not in tool
    assert IndexSnapshot.from_document(json.loads(json.dumps(document))) == snapshot


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "an index file is a JSON object, got list"),
        ({"servers": {}}, "servers: expected a list"),
        ({"servers": [{"tools": []}]}, "servers[0].server_id: expected a non-empty string"),
        (
            {"servers": [{"server_id": "s", "tools": [{}]}]},
            "servers[0].tools[0].tool_name: required field is missing",
        ),
        (
            {"servers": [{"server_id": "s", "tools": [{"tool_name": "t", "cost_estimate": "huge"}]}]},
            "servers[0].tools[0].cost_estimate: Input should be 'low', 'medium' or 'high'",
        ),
        ({"last_sync": 5, "servers": []}, "last_sync: expected an ISO 8601 time"),
        ({"version": 3.0e16, "servers": []}, "version: expected a string such as '1.0.0', got 3e+16"),
    ],
)
def test_a_bad_document_is_refused_naming_the_place(document: object, message: str) -> None:
    with pytest.raises(IndexFormatError) as caught:
        IndexSnapshot.from_document(document)
    assert message in str(caught.value)


def test_the_version_follows_contents_not_timestamps() -> None:
    first = ToolIndex(_snapshot())
    retimed = IndexSnapshot(
        {
            k: tuple(e.model_copy(update={"last_updated": "2030-01-01T00:00:00Z"}) for e in v)
            for k, v in _snapshot().servers.items()
        },
        "2030-01-01T00:00:00Z",
    )
    assert ToolIndex(retimed).version == first.version
    changed = dict(_snapshot().servers)
    changed["home"] = (changed["home"][0].model_copy(update={"description": "something else"}),)
    assert ToolIndex(IndexSnapshot(changed)).version != first.version
