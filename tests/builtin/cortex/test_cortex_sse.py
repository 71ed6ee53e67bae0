"""`nexus cortex serve --sse`: the SSE transport the design document names, driven by the SDK's sse_client."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from cortex_support import NEXUS, TOOL_NAMES, child_env, read_json, structured
from mcp import Client
from mcp.client.sse import sse_client

from support.polling import eventually_sync
from support.processes import free_port


@pytest.fixture
def sse_server(knowledge_dir: Path, tmp_path: Path) -> Iterator[str]:
    """`nexus cortex serve --sse` on a free loopback port; yields its SSE URL."""
    port = free_port()
    log_path = tmp_path / "serve-sse.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(NEXUS), "cortex", "serve", "--sse", "--port", str(port), "--dir", str(knowledge_dir)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env(),
        )  # fmt: skip
        try:

            def streaming() -> bool:
                assert process.poll() is None, log_path.read_text()
                try:
                    # The SSE endpoint is a never-ending stream: only its status line is awaited.
                    with httpx2.stream("GET", f"http://127.0.0.1:{port}/sse", timeout=1) as response:
                        assert response.status_code == 200, response.status_code
                    return True
                except httpx2.TransportError:
                    return False

            eventually_sync(streaming, 30, "the SSE server to start", interval=0.1)
            yield f"http://127.0.0.1:{port}/sse"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def test_sse_client_lists_and_calls_tools(sse_server: str, knowledge_dir: Path) -> None:
    async with Client(sse_client(sse_server), read_timeout_seconds=60) as client:
        assert client.server_info is not None and client.server_info.name == "cortex"
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOL_NAMES
        made = structured(
            await client.call_tool(
                "add_entity",
                {"category": "concepts", "id": "mcp-protocol", "type": "concept", "name": "MCP", "desc": "x"},
            )
        )
        assert made["id"] == "mcp-protocol"
        entity = await read_json(client, "knowledge://entities/concept/mcp-protocol")
        assert entity["name"] == "MCP"
    # It really went to the folder.
    assert "mcp-protocol" in (knowledge_dir / "entities" / "concepts.jsonl").read_text()


async def test_sse_refuses_a_foreign_host_header(sse_server: str) -> None:
    # Served on loopback, the SDK's DNS-rebinding protection is on.
    async with (
        httpx2.AsyncClient(timeout=5) as http,
        http.stream("GET", sse_server, headers={"Host": "evil.example:80"}) as response,
    ):
        assert response.status_code in (403, 421)


def test_http_and_sse_together_are_a_usage_error(knowledge_dir: Path) -> None:
    completed = subprocess.run(
        [str(NEXUS), "cortex", "serve", "--http", "--sse", "--dir", str(knowledge_dir)],
        capture_output=True, text=True, timeout=60, env=child_env(), check=False,
    )  # fmt: skip
    assert completed.returncode == 2
    assert "--http or --sse" in completed.stderr
