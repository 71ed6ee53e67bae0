"""The cortex as its design document writes it: the entity URI with a type, kebab-case
predicates, quoted numbers, and errors that start with their code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cortex_support import NEXUS, child_env, error_text, read_json, structured
from jsonschema import validators
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_nexus.builtin.cortex.server import create_server


async def _add(client: Client, category: str, entity_id: str, entity_type: str) -> dict[str, Any]:
    args = {"category": category, "id": entity_id, "type": entity_type, "name": entity_id, "desc": ""}
    return structured(await client.call_tool("add_entity", args))


def _relation_lines(knowledge_dir: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted((knowledge_dir / "relations").rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


# -- knowledge://entities/{type}/{id} -------------------------------------------------


async def test_the_documents_own_uri_example_resolves(knowledge_dir: Path) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        await _add(client, "concepts", "mcp-protocol", "concept")
        by_type = await read_json(client, "knowledge://entities/concept/mcp-protocol")
        by_category = await read_json(client, "knowledge://entities/concepts/mcp-protocol")
    assert by_type["id"] == "mcp-protocol" and by_type["type"] == "concept"
    assert by_type == by_category


async def test_a_word_that_is_both_a_category_and_a_type_reads_by_either(knowledge_dir: Path) -> None:
    # "person" is a category here AND the type of an entity filed under "people".
    server = create_server(knowledge_dir=str(knowledge_dir), categories=["people", "person"])
    async with Client(server) as client:
        await _add(client, "people", "ada", "person")
        await _add(client, "person", "bob", "human")
        assert (await read_json(client, "knowledge://entities/person/ada"))["id"] == "ada"  # its type
        assert (await read_json(client, "knowledge://entities/person/bob"))["id"] == "bob"  # its category
        assert (await read_json(client, "knowledge://entities/human/bob"))["id"] == "bob"
        for uri in ("knowledge://entities/people/bob", "knowledge://entities/human/ada"):
            with pytest.raises(MCPError):
                await client.read_resource(uri)


async def test_a_segment_naming_neither_says_which_uris_work(knowledge_dir: Path) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        await _add(client, "tech_stack", "fastapi", "framework")
        with pytest.raises(MCPError) as refused:
            await client.read_resource("knowledge://entities/people/fastapi")
    message = str(refused.value)
    assert "knowledge://entities/tech_stack/fastapi" in message
    assert "knowledge://entities/framework/fastapi" in message


# -- predicates -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    ["depends-on", "depends_on", "depends on", "Depends On", "DEPENDS-ON", "dependsOn", "depends--on-"],
)
async def test_predicates_are_stored_in_snake_case_however_they_are_spelled(
    knowledge_dir: Path, spelling: str
) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        await _add(client, "tech_stack", "fastapi", "framework")
        await _add(client, "tech_stack", "starlette", "framework")
        made = structured(
            await client.call_tool(
                "connect_entities", {"src": "fastapi", "rel": spelling, "dst": "starlette"}
            )
        )
        assert made["rel"] == "depends_on"
        # Every spelling is the same predicate: the triple is recorded once.
        again = await client.call_tool(
            "connect_entities", {"src": "fastapi", "rel": "depends_on", "dst": "starlette"}
        )
        assert error_text(again).startswith("[relation_exists] ")
    assert [line["rel"] for line in _relation_lines(knowledge_dir)] == ["depends_on"]


async def test_the_published_schema_accepts_the_spellings_the_server_accepts(knowledge_dir: Path) -> None:
    # A gateway checks arguments against this schema before the server sees them.
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = tools["connect_entities"].input_schema
    validator = validators.validator_for(schema)(schema)
    for rel in ("uses", "depends-on", "depends on", "dependsOn"):
        assert validator.is_valid({"src": "a", "rel": rel, "dst": "b"}), rel
    for rel in ("depends.on", "../x", "", "1uses"):
        assert not validator.is_valid({"src": "a", "rel": rel, "dst": "b"}), rel


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"src": "FastAPI", "rel": "uses", "dst": "starlette"}, "src 'FastAPI' is not valid"),
        ({"src": "fast_api", "rel": "uses", "dst": "starlette"}, "src 'fast_api' is not valid"),
        ({"src": "fastapi", "rel": "uses", "dst": "star lette"}, "dst 'star lette' is not valid"),
        ({"src": "fastapi", "rel": "us\u0435s", "dst": "starlette"}, "CYRILLIC SMALL LETTER IE"),
        ({"src": "fastapi", "rel": "a/b", "dst": "starlette"}, "path separator"),
        ({"src": "fastapi", "rel": "2uses", "dst": "starlette"}, "rel '2uses' is not valid"),
    ],
)
async def test_ids_stay_strict_and_odd_predicates_are_refused(
    knowledge_dir: Path, args: dict[str, str], expected: str
) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        await _add(client, "tech_stack", "fastapi", "framework")
        await _add(client, "tech_stack", "starlette", "framework")
        message = error_text(await client.call_tool("connect_entities", args))
    assert message.startswith("[invalid_input] ") and expected in message
    assert _relation_lines(knowledge_dir) == []


def test_the_command_line_stores_the_same_form(knowledge_dir: Path) -> None:
    def nexus(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(NEXUS), "cortex", *args, "--dir", str(knowledge_dir)],
            capture_output=True, text=True, timeout=60, env=child_env(), check=False,
        )  # fmt: skip

    for entity_id in ("nexus", "cortex"):
        assert nexus("add", "projects", entity_id, "--type", "project", "--name", entity_id).returncode == 0
    connected = nexus("connect", "nexus", "part-of", "cortex")
    assert connected.returncode == 0, connected.stderr
    assert json.loads(connected.stdout)["rel"] == "part_of"


# -- errors start with their code -----------------------------------------------------


async def test_every_deliberate_error_starts_with_its_code(knowledge_dir: Path) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        await _add(client, "concepts", "asgi", "concept")
        duplicate = error_text(
            await client.call_tool(
                "add_entity",
                {"category": "concepts", "id": "asgi", "type": "concept", "name": "A", "desc": ""},
            )
        )
        missing = error_text(await client.call_tool("add_observation", {"id": "ghost", "text": "boo"}))
        bad_id = error_text(await client.call_tool("add_observation", {"id": "../x", "text": "boo"}))
        out_of_range = error_text(await client.call_tool("read_graph", {"limit": 0}))
        absent = error_text(await client.call_tool("search_knowledge", {}))
        wrong_type = error_text(await client.call_tool("open_entities", {"ids": "asgi"}))
    assert duplicate.startswith("[entity_exists] entity 'asgi' already exists")
    assert missing.startswith("[entity_not_found] ")
    assert bad_id.startswith("[invalid_input] id '../x' contains a path separator")
    # Argument errors the SDK finds before the tool runs carry the code too, and name the argument.
    assert (
        out_of_range
        == "[invalid_input] read_graph: limit: Input should be greater than or equal to 1 (got 0)"
    )
    assert absent == "[invalid_input] search_knowledge: query: Field required"
    assert wrong_type.startswith("[invalid_input] open_entities: ids: Input should be a valid list")
    for text in (duplicate, missing, bad_id, out_of_range, absent, wrong_type):
        assert "Error executing tool" not in text


# -- quoted numbers ---------------------------------------------------------------------


async def test_numeric_arguments_may_be_quoted(knowledge_dir: Path) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        for entity_id in ("alpha", "beta", "gamma"):
            await _add(client, "concepts", entity_id, "concept")
        structured(await client.call_tool("connect_entities", {"src": "alpha", "rel": "uses", "dst": "beta"}))
        page = structured(await client.call_tool("read_graph", {"limit": "1", "offset": " 1 "}))
        assert [e["id"] for e in page["entities"]] == ["beta"] and page["offset"] == 1
        hits = structured(await client.call_tool("search_knowledge", {"query": "alpha", "limit": "1.0"}))
        assert hits["count"] == 1
        opened = structured(
            await client.call_tool("open_entities", {"ids": ["alpha"], "relation_limit": "0"})
        )
        assert opened["relations"] == [] and opened["relations_total"] == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", "valid integer"),
        ("1.5", "valid integer"),
        ("1_0", "valid integer"),
        (True, "valid integer"),
        ("0", "greater than or equal to 1"),
        ("5001", "less than or equal to 5000"),
    ],
)
async def test_other_numeric_values_stay_refused(knowledge_dir: Path, value: Any, expected: str) -> None:
    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        message = error_text(await client.call_tool("read_graph", {"limit": value}))
    assert message.startswith("[invalid_input] read_graph: limit: ") and expected in message
