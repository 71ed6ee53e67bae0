"""The standalone server: `nexus cortex serve` over stdio and over streamable HTTP."""

from __future__ import annotations

from pathlib import Path

from cortex_support import NEXUS, child_env, exercise_every_tool_and_resource, structured
from mcp import Client, StdioServerParameters


async def test_every_tool_and_resource_over_stdio(knowledge_dir: Path) -> None:
    params = StdioServerParameters(
        command=str(NEXUS), args=["cortex", "serve", "--dir", str(knowledge_dir)], env=child_env()
    )
    async with Client(params, read_timeout_seconds=60) as client:
        assert client.server_info is not None and client.server_info.name == "cortex"
        await exercise_every_tool_and_resource(client)
    assert (knowledge_dir / "entities" / "tech_stack.jsonl").is_file()


async def test_every_tool_and_resource_over_http(http_server: str) -> None:
    async with Client(http_server, read_timeout_seconds=60) as client:
        await exercise_every_tool_and_resource(client)
    # A second client sees what the first one wrote.
    async with Client(http_server) as client:
        graph = structured(await client.call_tool("read_graph", {}))
        assert graph["total_entities"] == 5
