"""Search over a real tool set and search mode, through a real `nexus serve`.

Servers: mcp-server-time and mcp-server-git (PyPI), server-everything and server-memory (npm),
the built-in cortex and device servers, and the robot test server (tools described in Chinese).
The gateway runs with `tool_search: {mode: auto, threshold: 20}`: with about 60 tools, clients
see find_tools + call_tool (+ pinned), except the client named in `clients` as "off".
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexSnapshot
from support.processes import NODE_BIN, VENV_BIN, free_port, require, running, wait_for_http
from support.served_gateway import gateway_env

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEARCH = {"mode": "auto", "threshold": 20, "pinned": ["time.*"], "clients": {"full-client": "off"}}


def _git_repo(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("search")
    port = free_port()
    config = {
        # No per-tool rate limit: the module calls find_tools back to back (the default 5/second
        # would answer some of those calls with an alert instead of hits).
        "gateway": {"port": port, "tool_search": SEARCH, "rate_limit": None},
        "servers": {
            "time": {"command": require(VENV_BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "git": {
                "command": require(VENV_BIN / "mcp-server-git"),
                "args": ["--repository", str(_git_repo(tmp / "repo"))],
            },
            "everything": {"command": require(NODE_BIN / "mcp-server-everything"), "args": ["stdio"]},
            "memory": {
                "command": require(NODE_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl")},
            },
            "robot": {"transport": "embedded", "module": "support.robot_server:create_server"},
        },
    }
    path = tmp / "nexus.json"
    path.write_text(json.dumps(config))
    args = [str(VENV_BIN / "nexus"), "serve", "--wait-ready", "-c", str(path), "--no-watch"]
    with running(args, env=gateway_env(tmp), log=tmp / "gateway.log") as proc:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(base + "/healthz", timeout=60, proc=proc)

        def index_settled() -> bool:
            # Every server in the index, not just a first sync: on a loaded machine a slow server
            # can miss the first sync and join through the incremental one a moment later.
            status = httpx2.get(base + "/api/index", timeout=10).json()
            synced = {
                row["server_id"] for row in status["servers"] if row["state"] == "synced" and row["tools"]
            }
            return status["source"] == "sync" and synced >= set(config["servers"])

        from support.polling import eventually_sync

        eventually_sync(index_settled, 60, "every server in the index")
        yield {"base": base, "url": base + "/mcp", "tmp": tmp}


def search(served: dict[str, Any], query: str, **params: Any) -> list[str]:
    answer = httpx2.get(
        served["base"] + "/api/index/tools", params={"q": query, "limit": 5, **params}, timeout=10
    )
    assert answer.status_code == 200, answer.text
    return [row["name"] for row in answer.json()["tools"]]


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("current time in a timezone", "time.get_current_time"),
        ("convert time between timezones", "time.convert_time"),
        ("show the working tree status", "git.git_status"),
        ("create entities in the knowledge graph", "memory.create_entities"),
        ("record a relation between two entities", "cortex.connect_entities"),
        ("echo a message back", "everything.echo"),
        ("sum of two numbers", "everything.get-sum"),
        ("machine cpu load and memory", "get_system_info"),
        ("battery level", "robot.battery_level"),
        ("git_log", "git.git_log"),  # a tool's own name finds it first
        ("导航到厨房", "robot.navigate_to"),
        ("紧急停止", "robot.emergency_stop"),
        ("打开客厅的灯", "robot.set_light"),
        ("拍照识别物体", "robot.capture_and_detect"),
        ("发送通知", "robot.send_notification"),
    ],
)
async def test_the_best_match_on_real_servers(served: dict[str, Any], query: str, best: str) -> None:
    found = search(served, query)
    assert found and found[0] == best, found


async def test_tags_filter_the_search(served: dict[str, Any]) -> None:
    assert search(served, "delete", tag="destructive")[0].startswith("memory.delete_")
    assert all(
        name.startswith(("memory.delete_", "git.git_reset"))
        for name in search(served, "delete", tag="destructive")
    )
    everything_reads = search(served, "tiny image", tag="read-only")
    assert everything_reads[0] == "everything.get-tiny-image"
    assert search(served, "停止", tag="navigation") == []  # emergency_stop is not a navigation tool


async def test_a_chinese_query_finds_an_english_tool_through_its_tag() -> None:
    english = IndexEntry(
        server_id="ros2_mcp",
        tool_name="navigate_to",
        name="ros2_mcp.navigate_to",
        description="Navigate robot to target position",
        tags=["navigation"],
    )
    other = IndexEntry(
        server_id="home", tool_name="set_light", name="home.set_light", description="Switch a light"
    )
    index = ToolIndex(IndexSnapshot({"ros2_mcp": (english,), "home": (other,)}))
    assert [e.name for e in index.search("导航到厨房")] == ["ros2_mcp.navigate_to"]
    assert index.search("当前时间") == []  # no single-character noise ("间")


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_search_mode_lists_find_tools_call_tool_and_the_pinned(
    served: dict[str, Any], mode: str
) -> None:
    async with Client(served["url"], mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names >= {"find_tools", "call_tool", "time.get_current_time", "time.convert_time"}
        assert not names & {"git.git_status", "memory.create_entities", "robot.navigate_to"}

        found = await client.call_tool("find_tools", {"query": "导航到目标位置", "limit": 3})
        rows = json.loads(_text(found))
        assert rows[0]["name"] == "robot.navigate_to" and rows[0]["available"] is True
        assert rows[0]["input_schema"]["properties"].keys() >= {"x", "y"}
        assert "navigation" in rows[0]["tags"]
        assert found.structured_content is not None and found.structured_content["tools"][0] == rows[0]

        tagged = await client.call_tool("find_tools", {"query": "", "tags": ["emergency"]})
        assert [row["name"] for row in json.loads(_text(tagged))] == ["robot.emergency_stop"]

        called = await client.call_tool(
            "call_tool", {"name": "robot.set_light", "arguments": {"room": "客厅", "on": True}}
        )
        assert not called.is_error and _text(called) == "客厅 light on"


async def test_call_tool_goes_through_the_pipeline_like_a_direct_call(served: dict[str, Any]) -> None:
    async with Client(served["url"], mode="legacy") as client:
        # the pipeline's validation names the field, exactly as for a direct call
        with pytest.raises(MCPError) as direct:
            await client.call_tool("robot.navigate_to", {"x": "far"})
        with pytest.raises(MCPError) as through:
            await client.call_tool("call_tool", {"name": "robot.navigate_to", "arguments": {"x": "far"}})
        assert through.value.error.message == direct.value.error.message
        with pytest.raises(MCPError, match=r"Unknown tool: robot\.fly"):
            await client.call_tool("call_tool", {"name": "robot.fly", "arguments": {}})
        with pytest.raises(MCPError, match="call_tool needs 'name'"):
            await client.call_tool("call_tool", {"arguments": {}})
        with pytest.raises(MCPError, match="'arguments' must be an object"):
            await client.call_tool("call_tool", {"name": "robot.battery_level", "arguments": [1]})
        with pytest.raises(MCPError, match=r"find_tools: 0 is less than the minimum of 1 \(at \$\.limit"):
            await client.call_tool("find_tools", {"query": "x", "limit": 0})
    metrics = httpx2.get(served["base"] + "/api/tools", timeout=10).json()["tools"]
    assert "find_tools" in {row["name"] for row in metrics}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_configured_off_sees_every_tool_and_no_search_tools(
    served: dict[str, Any], mode: str
) -> None:
    info = types.Implementation(name="full-client", version="1")
    async with Client(served["url"], mode=mode, client_info=info) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"git.git_status", "robot.navigate_to", "cortex.add_entity"} <= names
    assert not names & {"find_tools", "call_tool"}
    assert len(names) > SEARCH["threshold"]  # type: ignore[operator]


@pytest.mark.parametrize("limit", [5, 20, 50])
async def test_find_tools_answers_fit_and_are_never_offloaded(served: dict[str, Any], limit: int) -> None:
    """Full descriptions and schemas of five real hits are ~6 KB, over the 5 KB offload threshold:
    the answer is sized to fit instead (short descriptions, compact schemas) and never offloaded."""
    async with Client(served["url"], mode="legacy") as client:
        found = await client.call_tool(
            "find_tools", {"query": "create or read files and entities", "limit": limit}
        )
    assert not found.is_error
    text = _text(found)
    assert not text.startswith("SYSTEM_ALERT"), text[:200]
    assert (found.meta or {}).get("nexus/offload") is None
    first = found.content[0]
    assert isinstance(first, types.TextContent)
    rows = json.loads(first.text)
    assert len(first.text.encode()) <= 4000
    assert len(rows) >= min(limit, 5)
    for row in rows:  # what a caller needs to call it stays: the name, the argument names, required
        assert row["name"] and row["description"] and isinstance(row["input_schema"], dict)
    more = (found.structured_content or {}).get("more", [])
    assert min(limit, 5) <= len(rows) + len(more) <= limit
    if limit == 5:
        assert len(rows) == 5 and not more, "five hits must fit whole"
