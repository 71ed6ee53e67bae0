"""Helpers shared by the cortex tests: paths of the real executables, child environments,
and one scenario that drives every tool and resource, run over each transport."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import Client
from mcp_types import CallToolResult, TextResourceContents

REPO_ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
NEXUS = VENV_BIN / "nexus"
NODE_BIN = REPO_ROOT / "tools" / "node" / "node_modules" / ".bin"
SERVER_MEMORY = NODE_BIN / "mcp-server-memory"
INSPECTOR = NODE_BIN / "mcp-inspector"

TOOL_NAMES = {
    "add_entity",
    "connect_entities",
    "search_knowledge",
    "get_entropy_report",
    "add_observation",
    "open_entities",
    "read_graph",
}


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child process: ours, minus any cortex folder set by the caller."""
    env = {key: value for key, value in os.environ.items() if key != "NEXUS_CORTEX_DIR"}
    env.update(extra)
    return env


def structured(result: CallToolResult) -> dict[str, Any]:
    """The JSON a successful tool call returned (also checks the text form agrees)."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0]
    assert json.loads(text.text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error, f"expected an error, got {result.structured_content}"
    return result.content[0].text  # type: ignore[union-attr]


async def read_json(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    content = result.contents[0]
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "application/json"
    return json.loads(content.text)


async def exercise_every_tool_and_resource(client: Client) -> None:
    """Drive all seven tools and three resources through `client`, asserting real behaviour."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOL_NAMES
    schema = tools["add_entity"].input_schema
    assert schema["properties"]["category"]["enum"] == ["concepts", "tech_stack", "people", "projects"]
    assert schema["properties"]["id"]["pattern"] == "^[a-z0-9][a-z0-9-]*$"
    assert set(schema["required"]) == {"category", "id", "type", "name", "desc"}

    fastapi = structured(
        await client.call_tool(
            "add_entity",
            {
                "category": "tech_stack",
                "id": "fastapi",
                "type": "framework",
                "name": "FastAPI",
                "desc": "A Python web framework built on Starlette",
                "tags": ["python", "web"],
            },
        )
    )
    assert (
        fastapi["id"] == "fastapi" and fastapi["category"] == "tech_stack" and fastapi["observations"] == []
    )
    for category, entity_id, entity_type, name, desc in [
        ("concepts", "asgi", "concept", "ASGI", "Asynchronous server gateway interface"),
        ("tech_stack", "starlette", "framework", "Starlette", "A lightweight ASGI toolkit"),
        ("people", "ada-lovelace", "person", "Ada Lovelace", "Wrote the first program"),
    ]:
        args = {"category": category, "id": entity_id, "type": entity_type, "name": name, "desc": desc}
        structured(await client.call_tool("add_entity", args))

    duplicate = await client.call_tool(
        "add_entity",
        {"category": "concepts", "id": "fastapi", "type": "framework", "name": "Other", "desc": "x"},
    )
    assert error_text(duplicate).startswith("[entity_exists] ") and "add_observation" in error_text(duplicate)
    traversal = await client.call_tool(
        "add_entity",
        {"category": "../../etc", "id": "passwd", "type": "concept", "name": "x", "desc": "x"},
    )
    assert error_text(traversal).startswith("[invalid_input] ") and "category" in error_text(traversal)

    observed = structured(
        await client.call_tool(
            "add_observation", {"id": "fastapi", "text": "Validates requests with pydantic"}
        )
    )
    assert [o["text"] for o in observed["observations"]] == ["Validates requests with pydantic"]
    assert observed["updated"] >= observed["created"]
    missing = await client.call_tool("add_observation", {"id": "nobody", "text": "x"})
    assert error_text(missing).startswith("[entity_not_found] ")

    uses = structured(
        await client.call_tool(
            "connect_entities", {"src": "fastapi", "rel": "uses", "dst": "asgi", "context": "the server side"}
        )
    )
    assert uses == {**uses, "src": "fastapi", "rel": "uses", "dst": "asgi", "context": "the server side"}
    structured(
        await client.call_tool(
            "connect_entities", {"src": "fastapi", "rel": "depends_on", "dst": "starlette"}
        )
    )
    again = await client.call_tool("connect_entities", {"src": "fastapi", "rel": "uses", "dst": "asgi"})
    assert error_text(again).startswith("[relation_exists] ")
    dangling = await client.call_tool(
        "connect_entities", {"src": "fastapi", "rel": "uses", "dst": "nothing-here"}
    )
    assert error_text(dangling).startswith("[entity_not_found] ") and "nothing-here" in error_text(dangling)

    typo = structured(await client.call_tool("search_knowledge", {"query": "fastapy", "limit": 3}))
    assert typo["results"][0]["id"] == "fastapi"
    assert typo["results"][0]["matched"] == "name"
    assert len(typo["results"]) <= 3
    by_observation = structured(await client.call_tool("search_knowledge", {"query": "pydantic"}))
    assert by_observation["results"][0]["id"] == "fastapi"
    by_desc = structured(await client.call_tool("search_knowledge", {"query": "first programm"}))
    assert by_desc["results"][0]["id"] == "ada-lovelace"
    nothing = structured(await client.call_tool("search_knowledge", {"query": "qqqqxxxx"}))
    assert nothing["results"] == []

    opened = structured(await client.call_tool("open_entities", {"ids": ["fastapi", "ghost"]}))
    assert [e["id"] for e in opened["entities"]] == ["fastapi"]
    assert opened["missing"] == ["ghost"]
    assert opened["entities"][0]["observations"][0]["text"] == "Validates requests with pydantic"
    assert {(r["rel"], r["dst"]) for r in opened["relations"]} == {
        ("uses", "asgi"),
        ("depends_on", "starlette"),
    }

    page = structured(await client.call_tool("read_graph", {"limit": 2}))
    assert [e["id"] for e in page["entities"]] == ["fastapi", "asgi"]
    assert page["total_entities"] == 4 and page["total_relations"] == 2 and page["truncated"] is True
    rest = structured(await client.call_tool("read_graph", {"limit": 10, "offset": 2}))
    assert [e["id"] for e in rest["entities"]] == ["starlette", "ada-lovelace"] and rest["truncated"] is False

    structured(
        await client.call_tool(
            "add_entity",
            {
                "category": "tech_stack",
                "id": "fast-api",
                "type": "framework",
                "name": "Fast API",
                "desc": "dup",
            },
        )
    )
    report = structured(await client.call_tool("get_entropy_report", {}))
    assert report["nodes"] == 5 and report["edges"] == 2
    assert report["density"] == round(2 / (5 * 4), 8)
    assert set(report["orphans"]["ids"]) == {"ada-lovelace", "fast-api"}
    assert report["per_category"] == {"concepts": 1, "tech_stack": 3, "people": 1, "projects": 0}
    assert {"a": "fast-api", "b": "fastapi", "score": 100.0} in report["near_duplicates"]["pairs"]
    assert report["stale"]["count"] == 0 and report["dangling_relations"]["count"] == 0

    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert templates == {"knowledge://entities/{category}/{id}", "knowledge://relations/{year}/{month}"}
    assert "knowledge://stats/entropy" in {str(r.uri) for r in (await client.list_resources()).resources}

    entity = await read_json(client, "knowledge://entities/tech_stack/fastapi")
    assert entity["name"] == "FastAPI" and len(entity["relations"]) == 2 and len(entity["observations"]) == 1
    # The design document's form names the entity's type (framework) instead of its category.
    assert await read_json(client, "knowledge://entities/framework/fastapi") == entity
    now = datetime.now(UTC)
    month = await read_json(client, f"knowledge://relations/{now:%Y}/{now:%m}")
    assert month["count"] == 2 and {r["dst"] for r in month["relations"]} == {"asgi", "starlette"}
    stats = await read_json(client, "knowledge://stats/entropy")
    assert stats["nodes"] == 5 and stats["orphans"]["count"] == 2
