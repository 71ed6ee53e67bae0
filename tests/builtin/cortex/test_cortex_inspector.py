"""The standalone server through the npm MCP Inspector's command-line mode (a real third-party client).

Each Inspector run is a fresh Node process (about 2 s), so the calls are independent of
each other and run a few at a time against one HTTP server; one more run goes over stdio.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cortex_support import INSPECTOR, NEXUS, TOOL_NAMES, child_env

from mcp_nexus.builtin.cortex.store import KnowledgeStore


def inspector(*args: str) -> Any:
    run = subprocess.run(
        [str(INSPECTOR), "--cli", *args],
        capture_output=True, text=True, timeout=90, env=child_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout)


def tool_call(url: str, tool: str, **arguments: str) -> list[str]:
    pairs = [part for key, value in arguments.items() for part in ("--tool-arg", f"{key}={value}")]
    return [url, "--transport", "http", "--method", "tools/call", "--tool-name", tool, *pairs]


def read(url: str, uri: str) -> list[str]:
    return [url, "--transport", "http", "--method", "resources/read", "--uri", uri]


def test_inspector_cli_drives_every_tool_and_resource(knowledge_dir: Path, http_server: str) -> None:
    # Seeded through the store while the server runs: the server must pick it up.
    store = KnowledgeStore(knowledge_dir)
    store.add_entity("tech_stack", "fastapi", "framework", "FastAPI", "Python web framework", ["python"])
    store.add_entity("concepts", "asgi", "concept", "ASGI", "Server interface")
    store.add_entity("tech_stack", "starlette", "framework", "Starlette", "ASGI toolkit")
    store.connect("fastapi", "uses", "asgi")
    now = datetime.now(UTC)
    url = http_server
    runs = {
        "stdio_list": [str(NEXUS), "cortex", "serve", "--dir", str(knowledge_dir), "--method", "tools/list"],
        "templates": [url, "--transport", "http", "--method", "resources/templates/list"],
        "add": tool_call(url, "add_entity", category="tech_stack", id="uvicorn", type="server", name="Uvicorn",
                         desc="ASGI server", tags='["python","server"]'),
        "duplicate": tool_call(url, "add_entity", category="concepts", id="asgi", type="concept", name="A", desc="x"),
        "observe": tool_call(url, "add_observation", id="asgi", text="Async all the way"),
        "connect": tool_call(url, "connect_entities", src="starlette", rel="implements", dst="asgi"),
        "search": tool_call(url, "search_knowledge", query="fastpi", limit="5"),
        "open": tool_call(url, "open_entities", ids='["fastapi","ghost"]'),
        "graph": tool_call(url, "read_graph", limit="10"),
        "report": tool_call(url, "get_entropy_report"),
        "entity": read(url, "knowledge://entities/tech_stack/fastapi"),
        "month": read(url, f"knowledge://relations/{now:%Y}/{now:%m}"),
        "stats": read(url, "knowledge://stats/entropy"),
    }  # fmt: skip
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(runs, pool.map(lambda args: inspector(*args), runs.values()), strict=True))

    assert {tool["name"] for tool in results["stdio_list"]["tools"]} == TOOL_NAMES
    assert {t["uriTemplate"] for t in results["templates"]["resourceTemplates"]} == {
        "knowledge://entities/{category}/{id}",
        "knowledge://relations/{year}/{month}",
    }
    assert results["add"]["structuredContent"]["tags"] == ["python", "server"]
    duplicate = results["duplicate"]
    assert duplicate["isError"] is True and "[entity_exists]" in duplicate["content"][0]["text"]
    assert results["observe"]["structuredContent"]["observations"][0]["text"] == "Async all the way"
    assert results["connect"]["structuredContent"]["rel"] == "implements"
    assert results["search"]["structuredContent"]["results"][0]["id"] == "fastapi"
    opened = results["open"]["structuredContent"]
    assert opened["missing"] == ["ghost"] and opened["relations"][0]["dst"] == "asgi"
    assert results["graph"]["structuredContent"]["total_entities"] >= 3
    assert results["report"]["structuredContent"]["per_category"]["tech_stack"] >= 2
    entity = json.loads(results["entity"]["contents"][0]["text"])
    assert entity["id"] == "fastapi" and entity["relations"][0]["rel"] == "uses"
    assert json.loads(results["month"]["contents"][0]["text"])["count"] >= 1
    assert json.loads(results["stats"]["contents"][0]["text"])["nodes"] >= 3

    # Every write the Inspector made is in the files.
    with store.snapshot():
        assert store.get("uvicorn").type == "server"
        assert [o.text for o in store.get("asgi").observations] == ["Async all the way"]
        assert {(r.src, r.rel, r.dst) for r in store.relations()} == {
            ("fastapi", "uses", "asgi"),
            ("starlette", "implements", "asgi"),
        }
