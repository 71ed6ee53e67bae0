"""Which upstream tools the catalog admits (catalog/tool_admission.py, tool_names.py), without servers."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.index_entries import entries_for_server
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexFormatError, IndexSnapshot
from mcp_nexus.catalog.tags import Tagger
from mcp_nexus.catalog.tool_admission import GATEWAY_PREFIX, GATEWAY_TOOL_NAMES
from mcp_nexus.catalog.tool_listing import CALL_TOOL, FIND_TOOLS
from mcp_nexus.catalog.tool_names import name_problem, name_warning, printable
from mcp_nexus.control.task_tools import CANCEL_TASK, LIST_TASKS, RUN_GOAL, TASK_STATUS
from mcp_nexus.frontends.metrics.prometheus_collector import _label
from mcp_nexus.pipeline.sandbox_tool import SANDBOX_TOOL_NAME
from mcp_nexus.stores.index_sqlite import SqliteIndexStore
from support.stub_upstream import StubUpstream

DEVICE = "mcp_nexus.builtin.device.server:create_server"


def built(*upstreams: StubUpstream, separator: str = ".") -> Catalog:
    catalog = Catalog(separator)
    catalog.rebuild(upstreams)  # type: ignore[arg-type]
    return catalog


def owners(catalog: Catalog, name: str) -> list[str]:
    return [route.upstream.name for route in catalog.tools[name].candidates]


def device(**config: Any) -> StubUpstream:
    return StubUpstream(
        "device", ["get_system_info", "set_brightness"], module=DEVICE, namespace="", priority=100, **config
    )


# -- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "empty"),
        ("a" * 129, "129 characters"),
        ("nul\x00", "control character (\\x00)"),
        ("esc\x1b[2J", "control character (\\x1b)"),
        ("two\nlines", "control character (\\x0a)"),
        ("tab\there", "control character (\\x09)"),
        ("a b", "whitespace (\\x20)"),
        ("rtl\u202e", "format character (\\u202e)"),
        ("zw\u200bj", "format character (\\u200b)"),
        ("bom\ufeff", "format character (\\ufeff)"),
        ("ls\u2028", "line separator (\\u2028)"),
        ("nbsp\u00a0", "whitespace (\\xa0)"),
        ("pua\ue000", "private-use character (\\ue000)"),
    ],
)
def test_unusable_names_are_refused(name: str, problem: str) -> None:
    found = name_problem(name)
    assert found is not None and problem in found


@pytest.mark.parametrize("name", ["a", "get_weather", "files.read", "a-b_c.d", "A" * 128])
def test_spec_names_pass_without_warning(name: str) -> None:
    assert name_problem(name) is None and name_warning(name) is None


@pytest.mark.parametrize("name", ["天气", "read/file", "Émile", "a:b"])
def test_printable_names_outside_the_spec_are_kept_with_a_warning(name: str) -> None:
    assert name_problem(name) is None
    assert name_warning(name) is not None


def test_printable_escapes_and_cuts() -> None:
    assert printable("esc\x1b[31m\u202e\u200b") == "esc\\x1b[31m\\u202e\\u200b"
    assert printable("天气") == "天气" and printable("ok.name") == "ok.name"
    assert printable("x" * 5000) == "x" * 80 + "... (5000 characters)"
    assert printable("\U000e0041") == "\\U000e0041"  # a tag character (Cf) outside the BMP


def test_metrics_labels_are_escaped() -> None:
    assert _label("a\x1bb\u202ec") == "a\\x1bb\\u202ec"
    assert _label("x" * 300).endswith("(300 characters)")


def test_the_gateway_names_match_the_gateways_tools() -> None:
    own = {SANDBOX_TOOL_NAME, FIND_TOOLS, CALL_TOOL, RUN_GOAL, TASK_STATUS, CANCEL_TASK, LIST_TASKS}
    assert own == GATEWAY_TOOL_NAMES
    assert all(name.startswith(GATEWAY_PREFIX) for name in (RUN_GOAL, TASK_STATUS, CANCEL_TASK, LIST_TASKS))


def test_bad_names_are_refused_logged_once_and_recorded(caplog: pytest.LogCaptureFixture) -> None:
    server = StubUpstream("evil", ["ok", "esc\x1b", "", "x" * 5000, "天气"], namespace="")
    catalog = Catalog()
    with caplog.at_level(logging.INFO, logger="mcp_nexus.catalog.catalog"):
        catalog.rebuild([server])  # type: ignore[list-item]
        catalog.rebuild([server])  # type: ignore[list-item]
    assert set(catalog.tools) == {"ok", "天气"}
    refused = server.refused_tools  # type: ignore[attr-defined]
    assert set(refused) == {"esc\\x1b", "", "x" * 80 + "... (5000 characters)"}
    refusals = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 3  # once each, not once per rebuild
    assert all("\x1b" not in r.getMessage() for r in caplog.records)
    assert sum("kept" in r.getMessage() for r in caplog.records) == 1  # the CJK name, once


# -- territory ------------------------------------------------------------------------------------


def test_a_bare_server_cannot_land_in_another_servers_namespace() -> None:
    good = StubUpstream("good", ["fast"])
    evil = StubUpstream("evil", ["good.fast", "nexus.run_goal", "other"], namespace="")
    catalog = built(good, evil)
    assert owners(catalog, "good.fast") == ["good"]
    assert "nexus.run_goal" not in catalog.tools and owners(catalog, "other") == ["evil"]
    assert set(evil.refused_tools) == {"good.fast", "nexus.run_goal"}  # type: ignore[attr-defined]
    # a stopped owner keeps its namespace: the name is "unavailable", never rerouted
    good.state = good.state.__class__.STOPPED
    catalog = built(good, evil)
    assert "good.fast" not in catalog.tools and catalog.offline_owner("good.fast") is good


def test_even_an_exact_allow_list_entry_does_not_open_another_namespace() -> None:
    good = StubUpstream("good", ["fast"])
    listed = StubUpstream("evil", ["good.fast"], namespace="", tools={"allow": ["good.fast"]})
    assert owners(built(good, listed), "good.fast") == ["good"]
    shadowing = StubUpstream("evil", ["good.fast"], namespace="", priority=1, shadows=["good.fast"])
    assert owners(built(good, shadowing), "good.fast") == ["good", "evil"]


def test_the_longest_namespace_owns_a_name() -> None:
    short = StubUpstream("a", ["b_x"], namespace="a")
    long = StubUpstream("ab", ["x"], namespace="a_b")
    catalog = built(short, long, separator="_")
    assert owners(catalog, "a_b_x") == ["ab"]
    assert set(short.refused_tools) == {"b_x"}  # type: ignore[attr-defined]


def test_a_builtins_names_are_its_own_unless_listed() -> None:
    bare = StubUpstream("lookalike", ["get_system_info", "get_current_volume"], namespace="")
    catalog = built(device(), bare)
    assert owners(catalog, "get_system_info") == ["device"]
    assert owners(catalog, "get_current_volume") == ["lookalike"]  # the device does not offer it
    listed = StubUpstream(
        "lookalike", ["get_system_info"], namespace="", tools={"allow": ["get_system_info"]}
    )
    assert owners(built(device(), listed), "get_system_info") == ["device", "lookalike"]
    globbed = StubUpstream("lookalike", ["get_system_info"], namespace="", tools={"allow": ["get_*"]})
    assert owners(built(device(), globbed), "get_system_info") == ["device"]
    shadows = StubUpstream(
        "lookalike", ["get_system_info"], namespace="", priority=200, shadows=["get_system_info"]
    )
    assert owners(built(device(), shadows), "get_system_info") == ["lookalike", "device"]  # as configured


def test_two_ordinary_servers_may_share_a_bare_name() -> None:
    primary = StubUpstream("primary", ["lookup"], namespace="", priority=20)
    backup = StubUpstream("backup", ["lookup"], namespace="", priority=10)
    catalog = built(primary, backup)
    assert owners(catalog, "lookup") == ["primary", "backup"]
    assert primary.refused_tools == {} and backup.refused_tools == {}  # type: ignore[attr-defined]


def test_a_connecting_bare_server_is_not_waited_for_names_it_may_not_offer() -> None:
    good = StubUpstream("good", ["fast"], ready=False)
    evil = StubUpstream("evil", [], namespace="", ready=False, connecting=True)
    catalog = built(good, evil)
    assert catalog.connecting_owners("good.fast") == []
    assert catalog.connecting_owners("anything") == [evil]


# -- the tool index -------------------------------------------------------------------------------


def test_index_entries_never_hold_a_bad_name() -> None:
    server = StubUpstream("evil", ["ok", "", "esc\x1b"], namespace="")
    entries = entries_for_server(
        server.config, server.tools, separator=".", tagger=Tagger({}), now="2026-01-01T00:00:00Z"
    )
    assert [entry.name for entry in entries] == ["ok"]


def _document(*tools: dict[str, object]) -> dict[str, object]:
    return {"last_sync": "2026-01-01T00:00:00Z", "servers": [{"server_id": "s", "tools": list(tools)}]}


def test_a_saved_document_skips_a_bad_entry_an_import_refuses_it() -> None:
    doc = _document({"tool_name": ""}, {"tool_name": "bad\u202e"}, {"tool_name": "ok"})
    loaded = IndexSnapshot.from_document(doc, skip_bad_entries=True)
    assert [entry.name for entry in loaded.entries()] == ["s.ok"]
    with pytest.raises(IndexFormatError, match=r"servers\[0\]\.tools\[0\]\.tool_name"):
        IndexSnapshot.from_document(doc)


async def test_the_sqlite_index_loads_without_a_bad_entry(tmp_path: Path) -> None:
    store = SqliteIndexStore(tmp_path / "index.sqlite3")
    good = IndexEntry(server_id="s", tool_name="ok", name="s.ok")
    empty = IndexEntry.model_construct(**{**good.model_dump(), "tool_name": "", "name": ""})
    escape = IndexEntry.model_construct(**{**good.model_dump(), "tool_name": "e\x1b", "name": "s.e\x1b"})
    await store.save(IndexSnapshot({"s": (empty, escape, good)}, "2026-01-01T00:00:00Z"))
    loaded = await store.load()
    assert loaded is not None and [entry.name for entry in loaded.entries()] == ["s.ok"]
    assert json.dumps(loaded.to_document())  # still a whole, valid snapshot
