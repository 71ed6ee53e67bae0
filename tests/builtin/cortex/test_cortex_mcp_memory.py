"""The cortex through a real MCP client, in memory (the way the gateway embeds it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cortex_support import error_text, exercise_every_tool_and_resource, read_json, structured
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_nexus.builtin.cortex.errors import InvalidInputError
from mcp_nexus.builtin.cortex.server import create_server


async def test_every_tool_and_resource_in_memory(knowledge_dir: Path) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        await exercise_every_tool_and_resource(client)
    # What the tools wrote is on disk, in the documented layout, and a new server sees it.
    assert sorted(p.name for p in (knowledge_dir / "entities").iterdir()) == [
        "concepts.jsonl",
        "people.jsonl",
        "tech_stack.jsonl",
    ]
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        graph = structured(await client.call_tool("read_graph", {"limit": 100}))
        assert graph["total_entities"] == 5 and graph["total_relations"] == 2


@pytest.mark.parametrize(
    "uri",
    [
        "knowledge://entities/concepts/..%2F..%2Fetc%2Fpasswd",
        "knowledge://entities/..%2Fentities/asgi",
        "knowledge://entities/concepts/%2Fetc%2Fpasswd",
        "knowledge://entities/concepts/a%00b",
        "knowledge://entities/concepts/%D0%B0sgi",  # Cyrillic a
        "knowledge://entities/tech_stack/asgi",  # wrong category for a real entity
        "knowledge://entities/nowhere/asgi",
        "knowledge://entities/concepts/ghost",
        "knowledge://relations/2026/13",
        "knowledge://relations/26/01",
        "knowledge://relations/..%2F..%2Fentities/concepts",
    ],
)
async def test_bad_resource_uris_are_refused(knowledge_dir: Path, uri: str) -> None:
    server = create_server(knowledge_dir=str(knowledge_dir))
    async with Client(server) as client:
        structured(
            await client.call_tool(
                "add_entity",
                {"category": "concepts", "id": "asgi", "type": "concept", "name": "ASGI", "desc": ""},
            )
        )
        assert (await read_json(client, "knowledge://entities/concepts/asgi"))["id"] == "asgi"
        with pytest.raises(MCPError):
            await client.read_resource(uri)
    # Nothing outside the folder was created or touched.
    assert sorted(p.relative_to(knowledge_dir).as_posix() for p in knowledge_dir.rglob("*")) == [
        ".lock",
        "entities",
        "entities/concepts.jsonl",
        "relations",
    ]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("id", "../../etc/passwd", "path separator"),
        ("id", "/etc/passwd", "path separator"),
        ("id", "..", "dot"),
        ("id", "a.b", "dot"),
        ("id", "", "empty"),
        ("id", "a" * 65, "limit is 64"),
        ("id", "f\u0430stapi", "U+0430 CYRILLIC SMALL LETTER A"),
        ("id", "\uff46astapi", "FULLWIDTH LATIN SMALL LETTER F"),
        ("id", "Fastapi", "not valid"),
        ("id", "fast_api", "not valid"),
        ("id", "-rf", "not valid"),
        ("id", "fastapi\n", "not valid"),
        ("category", "people/../../x", "path separator"),
        ("category", "misc", "unknown category"),
        ("type", "Frame Work", "not valid"),
        ("name", "bad\x00name", "control character"),
        ("name", "evil\u202etxt.exe", "RIGHT-TO-LEFT OVERRIDE"),
        ("tags", ["ok", "x" * 65], "limit is 64"),
    ],
)
async def test_bad_entity_input_is_refused_with_a_clear_reason(
    knowledge_dir: Path, field: str, value: object, expected: str
) -> None:
    args = {
        "category": "concepts",
        "id": "fine-id",
        "type": "concept",
        "name": "Fine",
        "desc": "ok",
        field: value,
    }
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        message = error_text(await client.call_tool("add_entity", args))
        assert "[invalid_input]" in message and expected in message
        graph = structured(await client.call_tool("read_graph", {}))
        assert graph["total_entities"] == 0
    assert not (knowledge_dir / "entities" / "concepts.jsonl").exists()


async def test_bad_relation_input_is_refused(knowledge_dir: Path) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        for entity_id in ("a", "b"):
            args = {"category": "concepts", "id": entity_id, "type": "concept", "name": entity_id, "desc": ""}
            structured(await client.call_tool("add_entity", args))
        bad_rel = await client.call_tool("connect_entities", {"src": "a", "rel": "depends!on", "dst": "b"})
        assert error_text(bad_rel).startswith("[invalid_input] rel 'depends!on' is not valid")
        dotted = await client.call_tool("connect_entities", {"src": "a", "rel": "depends.on", "dst": "b"})
        assert error_text(dotted).startswith("[invalid_input] rel 'depends.on' contains a dot")
        bad_src = await client.call_tool("connect_entities", {"src": "../a", "rel": "uses", "dst": "b"})
        assert "src '../a' contains a path separator" in error_text(bad_src)
    assert list((knowledge_dir / "relations").iterdir()) == []


async def test_categories_and_stale_days_are_configurable(knowledge_dir: Path) -> None:
    (knowledge_dir / "entities").mkdir(parents=True)
    old = {
        "kind": "entity",
        "id": "old-idea",
        "type": "concept",
        "name": "Old idea",
        "desc": "",
        "tags": [],
        "created": "2020-01-01T00:00:00Z",
        "updated": "2020-01-01T00:00:00Z",
    }
    (knowledge_dir / "entities" / "ideas.jsonl").write_text(json.dumps(old) + "\n")
    server = create_server(knowledge_dir=str(knowledge_dir), categories=["ideas", "tools"], stale_days=7)
    async with Client(server) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["add_entity"].input_schema
        assert schema["properties"]["category"]["enum"] == ["ideas", "tools"]
        refused = await client.call_tool(
            "add_entity", {"category": "concepts", "id": "x", "type": "concept", "name": "X", "desc": ""}
        )
        assert "unknown category 'concepts'; expected one of ideas, tools" in error_text(refused)
        report = structured(await client.call_tool("get_entropy_report", {}))
        assert report["stale"]["days"] == 7
        assert report["stale"]["entities"] == [{"id": "old-idea", "updated": "2020-01-01T00:00:00Z"}]
        assert report["per_category"] == {"ideas": 1, "tools": 0}
        # An observation brings it back to life.
        structured(await client.call_tool("add_observation", {"id": "old-idea", "text": "Still relevant"}))
        assert structured(await client.call_tool("get_entropy_report", {}))["stale"]["count"] == 0


def test_factory_refuses_bad_options(knowledge_dir: Path) -> None:
    with pytest.raises(InvalidInputError, match="stale_days"):
        create_server(knowledge_dir=str(knowledge_dir), stale_days=0)
    with pytest.raises(InvalidInputError, match="category"):
        create_server(knowledge_dir=str(knowledge_dir), categories=["../x"])
    with pytest.raises(InvalidInputError, match="at least one category"):
        create_server(knowledge_dir=str(knowledge_dir), categories=[])
    with pytest.raises(InvalidInputError, match="got the string 'people'"):
        create_server(knowledge_dir=str(knowledge_dir), categories="people")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="repeated"):
        create_server(knowledge_dir=str(knowledge_dir), categories=["people", "people"])


async def test_default_folder_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_CORTEX_DIR", str(tmp_path / "from-env"))
    async with Client(create_server()) as client:
        structured(
            await client.call_tool(
                "add_entity",
                {"category": "projects", "id": "nexus", "type": "project", "name": "Nexus", "desc": ""},
            )
        )
    assert (tmp_path / "from-env" / "entities" / "projects.jsonl").is_file()
