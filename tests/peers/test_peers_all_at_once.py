"""Real third-party MCP servers, all behind one running gateway at once.

PyPI: mcp-server-time, mcp-server-git, mcp-server-sqlite (a v1-SDK server in its own venv);
npm: server-everything over stdio, streamable HTTP and SSE, server-memory; plus an embedded
Python server. The gateway is a real `nexus serve` process; clients of both eras talk to
it over HTTP, and over stdio through `nexus serve --stdio`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2
import mcp.client.session
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from support.demo_server import bare_demo_pair
from support.processes import (
    NODE_BIN,
    V1_BIN,
    VENV_BIN,
    child_env,
    free_port,
    require,
    running,
    wait_for_http,
    wait_for_port,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _git_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "README.md").write_text("hello\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env={**child_env(), **env})
    return path


def peer_config(tmp: Path, http_port: int, sse_port: int, gateway_port: int) -> dict[str, Any]:
    everything = require(NODE_BIN / "mcp-server-everything")
    return {
        "gateway": {"include_builtins": False, "port": gateway_port},
        "servers": {
            "time": {"command": require(VENV_BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "git": {
                "command": require(VENV_BIN / "mcp-server-git"),
                "args": ["--repository", str(_git_repo(tmp / "repo"))],
                "tools": {
                    "deny": ["git_commit", "git_reset", "git_add", "git_create_branch", "git_checkout"]
                },
            },
            "everything": {"command": everything, "args": ["stdio"]},
            "everything_http": {"type": "streamableHttp", "url": f"http://127.0.0.1:{http_port}/mcp"},
            "everything_sse": {"type": "sse", "url": f"http://127.0.0.1:{sse_port}/sse"},
            "memory": {
                "command": require(NODE_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")},
            },
            "sqlite": {
                "command": require(V1_BIN / "mcp-server-sqlite"),
                "args": ["--db-path", str(tmp / "t.db")],
            },
            **bare_demo_pair(),
        },
    }


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("peers")
    http_port, sse_port, gateway_port = free_port(), free_port(), free_port()
    everything = require(NODE_BIN / "mcp-server-everything")
    with ExitStack() as stack:
        http_peer = stack.enter_context(
            running([everything, "streamableHttp"], env=child_env(PORT=str(http_port)), log=tmp / "evh.log")
        )
        sse_peer = stack.enter_context(
            running([everything, "sse"], env=child_env(PORT=str(sse_port)), log=tmp / "evs.log")
        )
        wait_for_port(http_port, proc=http_peer)
        wait_for_port(sse_port, proc=sse_peer)
        config = peer_config(tmp, http_port, sse_port, gateway_port)
        config_path = tmp / "nexus.json"
        config_path.write_text(json.dumps(config))
        proc = stack.enter_context(
            running(
                [str(VENV_BIN / "nexus"), "serve", "--wait-ready", "-c", str(config_path)],
                log=tmp / "gateway.log",
            )
        )
        wait_for_http(f"http://127.0.0.1:{gateway_port}/healthz", timeout=60, proc=proc)
        yield {
            "url": f"http://127.0.0.1:{gateway_port}/mcp",
            "port": gateway_port,
            "config": config_path,
            "tmp": tmp,
        }


def text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_every_server_is_ready(gateway: dict[str, Any]) -> None:
    health = httpx2.get(f"http://127.0.0.1:{gateway['port']}/healthz").json()
    assert health["servers"] == {
        name: "READY"
        for name in (
            "time",
            "git",
            "everything",
            "everything_http",
            "everything_sse",
            "memory",
            "sqlite",
            "demo",
            "demo_stdio",
        )
    }, health


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_from_every_server_are_namespaced(gateway: dict[str, Any], mode: str) -> None:
    async with Client(gateway["url"], mode=mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        names = {t.name for t in (await client.list_tools()).tools}
    expected = {
        "time.get_current_time",
        "time.convert_time",
        "git.git_status",
        "git.git_log",
        "everything.echo",
        "everything_http.echo",
        "everything_sse.echo",
        "memory.create_entities",
        "memory.read_graph",
        "sqlite.read_query",
        "sqlite.list_tables",
        "echo",
        "add",
    }
    assert expected <= names, expected - names
    # the deny filter on git
    assert not {"git.git_commit", "git.git_reset", "git.git_add"} & names


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_calls_reach_every_kind_of_server(gateway: dict[str, Any], mode: str) -> None:
    async with Client(gateway["url"], mode=mode) as client:
        now = await client.call_tool("time.get_current_time", {"timezone": "UTC"})
        assert json.loads(text(now))["timezone"] == "UTC"
        status = await client.call_tool("git.git_status", {"repo_path": str(gateway["tmp"] / "repo")})
        assert "working tree clean" in text(status) or "nothing to commit" in text(status)
        for name in ("everything", "everything_http", "everything_sse"):
            echoed = await client.call_tool(f"{name}.echo", {"message": f"via {name}"})
            assert f"via {name}" in text(echoed)
            assert echoed.meta and echoed.meta["nexus/server"] == name
        created = await client.call_tool(
            "memory.create_entities",
            {"entities": [{"name": f"nexus-{mode}", "entityType": "project", "observations": ["a gateway"]}]},
        )
        assert not created.is_error
        graph = await client.call_tool("memory.read_graph", {})
        assert f"nexus-{mode}" in text(graph)
        tables = await client.call_tool("sqlite.list_tables", {})
        assert not tables.is_error


async def test_v1_sdk_server_round_trip(gateway: dict[str, Any]) -> None:
    async with Client(gateway["url"], mode="legacy") as client:
        made = await client.call_tool(
            "sqlite.create_table", {"query": "CREATE TABLE IF NOT EXISTS t (x INTEGER)"}
        )
        assert not made.is_error, text(made)
        await client.call_tool("sqlite.write_query", {"query": "INSERT INTO t VALUES (42)"})
        rows = await client.call_tool("sqlite.read_query", {"query": "SELECT x FROM t"})
        assert "42" in text(rows)


async def test_bare_name_goes_to_the_highest_priority(gateway: dict[str, Any]) -> None:
    async with Client(gateway["url"], mode="legacy") as client:
        result = await client.call_tool("echo", {"text": "who"})
    assert text(result) == "embedded: who"
    assert result.meta and result.meta["nexus/server"] == "demo"


async def test_progress_passes_through(gateway: dict[str, Any]) -> None:
    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async with Client(gateway["url"], mode="legacy") as client:
        result = await client.call_tool(
            "everything.trigger-long-running-operation",
            {"duration": 1, "steps": 4},
            progress_callback=on_progress,
        )
    assert "completed" in text(result).lower()
    assert len(seen) == 4


async def test_resources_and_prompts_of_real_servers(gateway: dict[str, Any]) -> None:
    async with Client(gateway["url"], mode="legacy") as client:
        resources = (await client.list_resources()).resources
        uris = [str(r.uri) for r in resources]
        static = next(u for u in uris if u.startswith("demo://resource/static"))
        read = await client.read_resource(static)
        assert read.contents
        assert "demo://info" in uris
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert {"everything.simple-prompt", "everything_http.args-prompt", "greet"} <= prompts
        prompt = await client.get_prompt("everything.args-prompt", {"city": "Paris", "state": "TX"})
        assert "Paris" in json.dumps(prompt.model_dump(mode="json"))
        completion = await client.complete(
            types.PromptReference(type="ref/prompt", name="everything.completable-prompt"),
            {"name": "department", "value": "E"},
        )
        assert "Engineering" in completion.completion.values


async def test_unknown_tool_is_a_clear_error(gateway: dict[str, Any]) -> None:
    async with Client(gateway["url"], mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("nope.nothing", {})
    assert caught.value.error.code == -32602
    assert "nope.nothing" in caught.value.error.message


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stdio_frontend_with_real_peers(
    gateway: dict[str, Any], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A desktop client launches `nexus serve --stdio` itself with the same config.
    # `--wait-ready` answers nothing until all seven peers are READY; the SDK's auto mode gives its
    # server/discover probe a fixed 10 s, which a loaded two-core machine starting seven peers
    # exceeded twice (then the fallback initialize is refused: the connection already speaks
    # 2026-07-28). The probe may wait here as long as the readiness does.
    monkeypatch.setattr(mcp.client.session, "DISCOVER_TIMEOUT_SECONDS", 60.0)
    params = StdioServerParameters(
        command=str(VENV_BIN / "nexus"),
        args=["serve", "--stdio", "--wait-ready", "-c", str(gateway["config"])],
        env=child_env(),
    )
    async with Client(params, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"time.get_current_time", "everything_sse.echo", "sqlite.read_query"} <= names
        result = await client.call_tool("everything.echo", {"message": "over stdio"})
        assert "over stdio" in text(result)
        result = await client.call_tool("add", {"a": 2, "b": 40})
        assert text(result) == "42"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sampling_and_elicitation_from_a_handshake_era_upstream_reach_the_client(
    gateway: dict[str, Any], mode: str
) -> None:
    """A handshake-era client answers over its back-channel; a 2026-07-28 client (mode auto) has
    its call held and answers each question in a next round (pipeline/held_calls.py)."""
    asked: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="the model says hi"),
            model="fake-llm",
        )

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append("elicitation")
        return types.ElicitResult(action="decline")

    async with Client(
        gateway["url"], mode=mode, sampling_callback=sampling, elicitation_callback=elicitation
    ) as c:
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        sampled = await c.call_tool(
            "everything.trigger-sampling-request", {"prompt": "say hi", "maxTokens": 20}
        )
        assert "the model says hi" in text(sampled)
        elicited = await c.call_tool("everything_http.trigger-elicitation-request", {})
        assert "decline" in text(elicited).lower()
    assert asked == ["sampling", "elicitation"]
