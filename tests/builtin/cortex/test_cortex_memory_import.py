"""Import a knowledge graph written by the real npm server-memory."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from cortex_support import NEXUS, SERVER_MEMORY, child_env, structured
from mcp import Client, StdioServerParameters

from mcp_nexus.builtin.cortex.memory_import import import_memory_file
from mcp_nexus.builtin.cortex.store import KnowledgeStore

ENTITIES = [
    {"name": "John Smith", "entityType": "person", "observations": ["Speaks Spanish", "Likes Rust"]},
    {"name": "Acme Corp", "entityType": "organization", "observations": ["Builds anvils"]},
    {"name": "FastAPI", "entityType": "framework", "observations": []},
    {"name": "Émile Zola", "entityType": "person", "observations": ["Wrote Germinal"]},
    {"name": "???", "entityType": "mystery", "observations": ["cannot become an id"]},
    {"name": "john smith", "entityType": "person", "observations": ["a different John"]},
]
RELATIONS = [
    {"from": "John Smith", "to": "Acme Corp", "relationType": "works at"},
    {"from": "John Smith", "to": "FastAPI", "relationType": "uses"},
    {"from": "Émile Zola", "to": "John Smith", "relationType": "inspired"},
    {"from": "???", "to": "FastAPI", "relationType": "uses"},
]


async def write_with_server_memory(memory_file: Path) -> None:
    """Let server-memory itself build its file through its own tools."""
    params = StdioServerParameters(
        command=str(SERVER_MEMORY), env=child_env(MEMORY_FILE_PATH=str(memory_file))
    )
    async with Client(params, read_timeout_seconds=60) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"create_entities", "create_relations", "add_observations"} <= tools
        for result in [
            await client.call_tool("create_entities", {"entities": ENTITIES}),
            await client.call_tool("create_relations", {"relations": RELATIONS}),
            await client.call_tool(
                "add_observations",
                {"observations": [{"entityName": "FastAPI", "contents": ["Typed", "Fast"]}]},
            ),
        ]:
            assert not result.is_error, result.content


async def test_import_of_a_real_server_memory_file(knowledge_dir: Path, tmp_path: Path) -> None:
    memory_file = tmp_path / "memory.jsonl"
    await write_with_server_memory(memory_file)
    lines = [json.loads(line) for line in memory_file.read_text().splitlines()]
    assert {line["type"] for line in lines} == {"entity", "relation"} and len(lines) == 10

    command = [str(NEXUS), "cortex", "import", str(memory_file), "--dir", str(knowledge_dir)]
    with anyio.fail_after(60):
        run = await anyio.run_process(
            [*command, "--map", "organization=projects"], check=False, env=child_env()
        )
    assert run.returncode == 0, run.stderr.decode()
    report = json.loads(run.stdout)
    assert report["entities_added"] == 4
    assert report["observations_added"] == 2  # the first observation of each entity became its desc
    assert report["relations_added"] == 3
    unmapped = {issue["line"]: issue["reason"] for issue in report["unmapped"]}
    assert len(unmapped) == 3
    assert any("'???'" in reason and "no ASCII letters" in reason for reason in unmapped.values())
    assert any(
        "'john smith'" in reason and "already taken by 'John Smith'" in reason for reason in unmapped.values()
    )
    assert any("from '???'" in reason for reason in unmapped.values())
    assert report["ids"]["Émile Zola"] == "emile-zola"

    store = KnowledgeStore(knowledge_dir)
    with store.snapshot():
        john = store.get("john-smith")
        assert (john.category, john.type, john.desc) == ("people", "person", "Speaks Spanish")
        assert [o.text for o in john.observations] == ["Likes Rust"]
        assert store.get("acme-corp").category == "projects" and store.get("acme-corp").type == "organization"
        assert store.get("fastapi").category == "tech_stack"
        fastapi = store.get("fastapi")
        assert [o.text for o in fastapi.observations] == ["Fast"] and fastapi.desc == "Typed"
        assert store.get("emile-zola").name == "Émile Zola"
        assert {(r.src, r.rel, r.dst) for r in store.relations()} == {
            ("john-smith", "works_at", "acme-corp"),
            ("john-smith", "uses", "fastapi"),
            ("emile-zola", "inspired", "john-smith"),
        }

    # The imported graph is served like any other.
    from mcp_nexus.builtin.cortex.server import create_server

    async with Client(create_server(knowledge_dir=str(knowledge_dir))) as client:
        hits = structured(await client.call_tool("search_knowledge", {"query": "spanish"}))
        assert hits["results"][0]["id"] == "john-smith"

    # Importing the same file again adds nothing.
    again = import_memory_file(
        KnowledgeStore(knowledge_dir), memory_file, category_map={"organization": "projects"}
    )
    assert (again.entities_added, again.observations_added, again.relations_added) == (0, 0, 0)
    assert again.relations_already_present == 3
