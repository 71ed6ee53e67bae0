"""find_tools answers each hit with the form that calls it from python_sandbox code, beside its name."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_snapshot import IndexSnapshot
from mcp_nexus.config.tool_search import ToolSearchSettings
from mcp_nexus.pipeline.search_tools import search_tools
from search.real_tools import index_entries


async def _no_call(name: str, arguments: dict[str, Any], caller: Any) -> types.CallToolResult:
    raise AssertionError("find_tools calls no tool")


async def test_each_hit_carries_its_code_call_form() -> None:
    by_server: dict[str, list[Any]] = {}
    for entry in index_entries():
        by_server.setdefault(entry.server_id, []).append(entry)
    index = ToolIndex(IndexSnapshot({server: tuple(entries) for server, entries in by_server.items()}))
    find = search_tools(index, Catalog("."), ToolSearchSettings, _no_call)[0]
    answer = await find.handler({"query": "show recent commits", "limit": 3})
    rows = json.loads(answer.content[0].text)  # type: ignore[union-attr]
    log = next(row for row in rows if row["name"] == "git.git_log")
    assert (
        log["code"]
        == "tools.git.git_log(repo_path=..., max_count=..., start_timestamp=..., end_timestamp=...)"
    )
    sums = await find.handler({"query": "add 17 and 25", "limit": 1})
    assert json.loads(sums.content[0].text)[0]["code"] == "tools.everything.get_sum(a=..., b=...)"  # type: ignore[union-attr]
    assert answer.structured_content is not None and answer.structured_content["tools"] == rows
