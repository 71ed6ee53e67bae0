"""`gateway.tool_search.ranking` (hybrid | bm25) chooses how find_tools ranks, at start and on reload."""

from __future__ import annotations

import pytest

from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexSnapshot
from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.tool_search import ToolSearchSettings
from search.real_tools import index_entries
from support.gateway import load, running_gateway


def _document(ranking: str | None) -> dict[str, object]:
    search: dict[str, object] = {"mode": "on"}
    if ranking is not None:
        search["ranking"] = ranking
    return {
        "gateway": {"include_builtins": False, "tool_search": search},
        "servers": {"robot": {"transport": "embedded", "module": "support.robot_server:create_server"}},
    }


def test_hybrid_is_the_default_and_a_wrong_value_is_named() -> None:
    assert ToolSearchSettings().ranking == "hybrid"
    assert ToolSearchSettings(ranking="bm25").ranking == "bm25"
    with pytest.raises(ConfigError) as raised:
        load(_document("semantic"))
    assert "gateway.tool_search.ranking" in str(raised.value) and "'hybrid' or 'bm25'" in str(raised.value)


def test_bm25_ranks_by_words_alone() -> None:
    by_server: dict[str, list[IndexEntry]] = {}
    for entry in index_entries():
        by_server.setdefault(entry.server_id, []).append(entry)
    index = ToolIndex(IndexSnapshot({server: tuple(entries) for server, entries in by_server.items()}))
    index.ranking = "bm25"
    # "give me a small picture" shares no word with "Returns a tiny MCP logo image" (the thesaurus
    # relates small/tiny and picture/image): both rankings find it, by different means.
    assert index.search("give me a small picture", limit=1)[0].name == "everything.get-tiny-image"
    assert index._search is not None and index._search.ranking == "bm25"
    assert index._search._vectors is None  # no model loaded for bm25
    index.ranking = "hybrid"
    assert index._search is None  # dropped: built again the new way
    index.search("give me a small picture", limit=1)
    assert index._search is not None and index._search.ranking == "hybrid"
    assert index._search._vectors is not None


async def test_the_gateway_applies_the_setting_at_start_and_on_reload() -> None:
    async with running_gateway(_document("bm25")) as gateway:
        assert gateway.index.ranking == "bm25"
        assert gateway.index.search("navigate", limit=1)  # the robot's tools, ranked by BM25
        assert gateway.index._search is not None and gateway.index._search.ranking == "bm25"
        await gateway.reload(load(_document(None)))
        assert gateway.index.ranking == "hybrid"
        gateway.index.search("navigate", limit=1)
        assert gateway.index._search is not None and gateway.index._search.ranking == "hybrid"
