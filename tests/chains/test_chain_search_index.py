"""The tool index's chain entries on their own: a chain shadows a server's tool of the same name
(as in the catalog), survives every new snapshot a sync brings, and is never part of what is saved."""

from __future__ import annotations

from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_chains import CHAIN_TAG, chain_entries
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexSnapshot
from mcp_nexus.catalog.tags import Tagger
from mcp_nexus.config.chains import ChainConfig

NOW = "2026-11-26T12:00:00Z"


def server_entry(tool: str, description: str) -> IndexEntry:
    return IndexEntry(server_id="gov", tool_name=tool, name=f"gov.{tool}", description=description)


def chains(**descriptions: str) -> dict[str, ChainConfig]:
    return {
        name.replace("__", "."): ChainConfig.model_validate(
            {"description": text, "steps": [{"tool": "gov.echo"}]}
        )
        for name, text in descriptions.items()
    }


def snapshot(*entries: IndexEntry) -> IndexSnapshot:
    return IndexSnapshot({"gov": entries}, NOW)


def test_a_chain_shadows_a_servers_tool_of_its_name() -> None:
    index = ToolIndex(snapshot(server_entry("fail", "Fail on purpose."), server_entry("echo", "Echo text.")))
    index.set_chains(
        chain_entries(chains(gov__fail="Fail twice in a row, politely."), tagger=Tagger(), now=NOW)
    )
    entry = index.get_tool_entry("gov.fail")
    assert entry is not None and entry.server_id == "nexus" and CHAIN_TAG in entry.tags
    assert [e.name for e in index.get_all_tools()] == ["gov.echo", "gov.fail"]  # once, the chain's
    assert [e.server_id for e in index.search("fail", limit=5)] == ["nexus"]


def test_a_chain_named_like_a_servers_bare_tool_keeps_that_name() -> None:
    index = ToolIndex(snapshot(server_entry("echo", "Echo text.")))
    index.set_chains(chain_entries(chains(echo="Echo it twice."), tagger=Tagger(), now=NOW))
    assert index.get_server_by_tool("echo") == "nexus"  # calling `echo` runs the chain
    assert index.get_server_by_tool("gov.echo") == "gov"


def test_chains_survive_a_new_snapshot_and_are_never_saved_with_it() -> None:
    index = ToolIndex()
    index.set_chains(chain_entries(chains(report="Report the lights that are on."), tagger=Tagger(), now=NOW))
    version = index.version
    index.set_snapshot(snapshot(server_entry("echo", "Echo text.")))  # what a sync does
    assert index.get_tool_entry("report") is not None and index.version != version
    assert index.get_tools_by_tag(CHAIN_TAG) == list(index.chains)
    assert index.tags()[CHAIN_TAG] == 1
    document = index.snapshot.to_document()
    assert [server["server_id"] for server in document["servers"]] == ["gov"]
    assert index.describe()["tools"] == 2 and index.describe()["chains"] == 1
    index.set_chains(())
    assert index.get_tool_entry("report") is None and index.tags().get(CHAIN_TAG) is None


def test_an_operators_rule_may_tag_chains_too_without_a_second_chain_tag() -> None:
    tagger = Tagger({"chain": ["lights"], "home": ["lights"]})
    (entry,) = chain_entries(chains(report="Report the lights that are on."), tagger=tagger, now=NOW)
    assert entry.tags.count(CHAIN_TAG) == 1 and "home" in entry.tags


def test_an_unchanged_chain_keeps_its_entry_and_time() -> None:
    (first,) = chain_entries(chains(report="Report the lights."), tagger=Tagger(), now=NOW)
    (again,) = chain_entries(
        chains(report="Report the lights."),
        tagger=Tagger(),
        now="2026-11-27T00:00:00Z",
        previous={"report": first},
    )
    assert again is first
    (changed,) = chain_entries(
        chains(report="Report the doors."),
        tagger=Tagger(),
        now="2026-11-27T00:00:00Z",
        previous={"report": first},
    )
    assert changed.last_updated == "2026-11-27T00:00:00Z"
