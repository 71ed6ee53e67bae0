"""The controller design's sync rules, against real servers (stdio children) in a real gateway.

Each test keeps its index file under tmp_path (`gateway.index.path`); nothing is written to ~/.local.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

from lifecycle.faults import faulty
from mcp_nexus.catalog.index_snapshot import IndexSnapshot
from mcp_nexus.config.load import config_from_document
from mcp_nexus.gateway import Gateway
from mcp_nexus.stores.index_location import open_index_store
from support.gateway import running
from support.polling import eventually
from support.processes import TESTS, VENV_BIN, require

SETTLE_S = 30.0
ROBOT_TOOLS = {
    "navigate_to",
    "emergency_stop",
    "send_notification",
    "capture_and_detect",
    "set_light",
    "battery_level",
}


def servers(*, broken: bool = False, auto_restart: bool = True) -> dict[str, Any]:
    """The robot server (Python, stdio) and mcp-server-time (PyPI, stdio); `broken`: commands that cannot start."""
    robot: dict[str, Any] = {
        "command": sys.executable,
        "args": ["-m", "support.robot_server"],
        "env": {"PYTHONPATH": str(TESTS)},
        "auto_restart": auto_restart,
    }
    time_server: dict[str, Any] = {
        "command": require(VENV_BIN / "mcp-server-time"),
        "args": ["--local-timezone", "UTC"],
        "auto_restart": auto_restart,
    }
    if broken:
        robot = {"command": str(Path("/nonexistent/robot-server")), "restart": {"max_attempts": 1}}
        time_server = {"command": str(Path("/nonexistent/time-server")), "restart": {"max_attempts": 1}}
    return {"robot": robot, "time": time_server}


def config(
    index_file: Path, *, broken: bool = False, auto_restart: bool = True, **index: Any
) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "index": {"path": str(index_file), **index}},
        "servers": servers(broken=broken, auto_restart=auto_restart),
    }


async def settled(gateway: Gateway) -> dict[str, Any]:
    assert await gateway.index_sync.wait_settled(SETTLE_S), gateway.index_sync.describe()
    return gateway.index_sync.describe()


async def saved(index_file: Path) -> IndexSnapshot:
    snapshot = await open_index_store(index_file).load()
    assert snapshot is not None, f"nothing saved at {index_file}"
    return snapshot


async def test_first_start_syncs_and_saves_then_a_fresh_cache_is_used_as_is(tmp_path: Path) -> None:
    index_file = tmp_path / "index.sqlite3"
    async with running(config(index_file)) as runtime:
        status = await settled(runtime.gateway)
        assert (status["source"], status["stale"], status["syncs"]) == ("sync", False, 1)
        assert "no saved index" in status["message"]
        index = runtime.gateway.index
        assert {e.tool_name for e in index.get_all_tools() if e.server_id == "robot"} == ROBOT_TOOLS
        assert index.get_server_by_tool("get_current_time") == "time"
        assert index.get_tool_entry("robot.navigate_to") == index.get_tool_entry("navigate_to")
        version = index.version
    first = await saved(index_file)
    assert {e.name for e in first.entries()} >= {"robot.navigate_to", "time.get_current_time"}

    async with running(config(index_file)) as runtime:
        status = await settled(runtime.gateway)
        # within cache_ttl_seconds (3600 by default), holding tools, no force: the saved snapshot, no sync
        assert (status["source"], status["syncs"], status["last_sync"]) == ("cache", 0, first.last_sync)
        assert {s["state"] for s in status["servers"]} == {"cached"}
        assert runtime.gateway.index.version == version

    async with running(config(index_file, force_refresh_on_init=True)) as runtime:
        status = await settled(runtime.gateway)
        assert (status["source"], status["syncs"]) == ("sync", 1)
        assert "force_refresh_on_init" in status["message"]


async def test_an_expired_cache_is_synced_again(tmp_path: Path) -> None:
    index_file = tmp_path / "index.json"  # the design's own cache file format
    async with running(config(index_file)) as runtime:
        await settled(runtime.gateway)
    document = json.loads(index_file.read_text())
    document["last_sync"] = "2020-01-01T00:00:00Z"
    index_file.write_text(json.dumps(document))
    async with running(config(index_file, cache_ttl_seconds=3600)) as runtime:
        status = await settled(runtime.gateway)
        assert (status["source"], status["syncs"]) == ("sync", 1)
        assert "older than cache_ttl_seconds (3600 s)" in status["message"]
    assert json.loads(index_file.read_text())["last_sync"] > "2026"


async def test_killed_servers_leave_the_stale_cache_served_and_one_back_saves_a_new_snapshot(
    tmp_path: Path,
) -> None:
    index_file = tmp_path / "index.sqlite3"
    async with running(config(index_file, auto_restart=False)) as runtime:
        gateway = runtime.gateway
        await settled(gateway)
        before = gateway.index.get_all_tools()
        for name in ("robot", "time"):
            pid = gateway.upstreams[name].pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
        await eventually(
            lambda: not any(u.is_ready for u in gateway.upstreams.values()),
            15,
            "both servers down after SIGKILL",
        )
        status = await gateway.index_sync.sync("test")
        assert (status["source"], status["stale"]) == ("stale-cache", True)
        assert "every server failed to list its tools" in status["message"]
        assert {s["server_id"]: s["state"] for s in status["servers"]} == {
            "robot": "cached",
            "time": "cached",
        }
        assert all(s["error"] for s in status["servers"])  # why each failed
        assert gateway.index.get_all_tools() == before  # still served
        assert (await saved(index_file)).tool_count == len(before)

        await gateway.servers.start("robot")  # one server back: the rules decide again
        await eventually(
            lambda: gateway.index.status.source == "sync", 15, "a sync after the robot came back"
        )
        status = gateway.index_sync.describe()
        assert status["stale"] is False
        assert {s["server_id"]: s["state"] for s in status["servers"]} == {
            "robot": "synced",
            "time": "failed",
        }
        assert {e.server_id for e in gateway.index.get_all_tools()} == {"robot"}
        await eventually(
            lambda: _servers_saved(index_file) == {"robot"}, 10, "the new snapshot (robot only) saved"
        )


def _servers_saved(index_file: Path) -> set[str]:
    with sqlite3.connect(index_file) as db:
        return {row[0] for row in db.execute("SELECT DISTINCT server_id FROM tools")}


async def test_servers_that_cannot_start_fall_back_to_the_saved_snapshot_or_to_nothing(
    tmp_path: Path,
) -> None:
    index_file = tmp_path / "index.sqlite3"
    async with running(config(index_file)) as runtime:
        await settled(runtime.gateway)
        count = len(runtime.gateway.index.get_all_tools())

    async with running(config(index_file, broken=True, force_refresh_on_init=True)) as runtime:
        status = await settled(runtime.gateway)
        assert (status["source"], status["stale"], status["tools"]) == ("stale-cache", True, count)
        assert runtime.gateway.index.get_tool_entry("navigate_to") is not None

    async with running(config(tmp_path / "fresh.sqlite3", broken=True)) as runtime:
        status = await settled(runtime.gateway)
        assert (status["source"], status["tools"]) == ("empty", 0)
        assert "the index is empty" in status["message"]
        assert {s["state"] for s in status["servers"]} == {"failed"}
    assert (
        not (tmp_path / "fresh.sqlite3").exists()
        or (await open_index_store(tmp_path / "fresh.sqlite3").load()) is None
    )


async def test_one_failing_server_does_not_stop_a_new_snapshot(tmp_path: Path) -> None:
    doc = config(tmp_path / "index.sqlite3")
    doc["servers"]["time"] = {"command": "/nonexistent/time-server", "restart": {"max_attempts": 1}}
    async with running(doc) as runtime:
        status = await settled(runtime.gateway)
        assert status["source"] == "sync" and "failed: time" in status["message"]
        assert {s["server_id"]: s["state"] for s in status["servers"]} == {
            "robot": "synced",
            "time": "failed",
        }
    assert set((await saved(tmp_path / "index.sqlite3")).servers) == {"robot"}


async def test_list_changed_updates_the_index_incrementally_and_saves(tmp_path: Path) -> None:
    index_file = tmp_path / "index.sqlite3"
    doc = {
        "gateway": {"include_builtins": False, "index": {"path": str(index_file)}},
        "servers": {
            "demo": {
                "command": sys.executable,
                "args": ["-m", "support.demo_server", "grower"],
                "env": {"PYTHONPATH": str(TESTS)},
            }
        },
    }
    async with running(doc) as runtime:
        gateway = runtime.gateway
        await settled(gateway)
        version = gateway.index.version
        echo_time = gateway.index.get_tool_entry("demo.echo").last_updated  # type: ignore[union-attr]
        result = await gateway.call_tool_result("demo.grow", {"name": "navigate_home"})
        assert not result.is_error, result
        await eventually(
            lambda: gateway.index.get_tool_entry("demo.navigate_home") is not None, 10, "the new tool"
        )
        grown = gateway.index.get_tool_entry("demo.navigate_home")
        assert grown is not None and "navigation" in grown.tags and grown.blocking
        assert gateway.index.version != version
        assert gateway.index.get_tool_entry("demo.echo").last_updated == echo_time  # type: ignore[union-attr]
        assert gateway.index.status.syncs == 1  # incremental: no full sync
        await eventually(
            lambda: "navigate_home" in _tools_saved(index_file), 10, "the incremental change saved"
        )


def _tools_saved(index_file: Path) -> set[str]:
    with sqlite3.connect(index_file) as db:
        return {row[0] for row in db.execute("SELECT tool_name FROM tools")}


async def test_a_snapshot_older_than_the_ttl_is_synced_again_while_running(tmp_path: Path) -> None:
    doc = config(tmp_path / "index.sqlite3", cache_ttl_seconds=1)
    del doc["servers"]["time"]
    async with running(doc) as runtime:
        gateway = runtime.gateway
        await settled(gateway)
        first = gateway.index.last_sync
        await eventually(lambda: gateway.index.status.syncs >= 2, 10, "a second sync after cache_ttl_seconds")
        assert "cache_ttl_seconds passed" in gateway.index.status.message
        assert gateway.index.last_sync is not None and first is not None and gateway.index.last_sync >= first


async def test_a_reload_retags_the_index_and_turns_search_mode_on(tmp_path: Path) -> None:
    doc = config(tmp_path / "index.sqlite3")
    del doc["servers"]["time"]
    async with running(doc) as runtime:
        gateway = runtime.gateway
        await settled(gateway)
        assert "home" not in gateway.index.get_tool_entry("set_light").tags  # type: ignore[union-attr]
        assert "find_tools" not in gateway.catalog.tools
        doc["gateway"]["index"]["tag_rules"] = {"home": ["灯"]}
        doc["gateway"]["tool_search"] = {"mode": "on"}
        new, _ = config_from_document(doc)
        await gateway.reload(new)
        await eventually(
            lambda: [e.name for e in gateway.index.get_tools_by_tag("home")] == ["robot.set_light"],
            10,
            "set_light tagged home after the reload",
        )
        assert {"find_tools", "call_tool"} <= set(gateway.catalog.tools)
        found = await gateway.call_tool_result("find_tools", {"query": "灯", "tags": ["home"]})
        assert json.loads(found.content[0].text)[0]["name"] == "robot.set_light"  # type: ignore[union-attr]


async def test_a_ready_server_that_timed_out_in_the_sync_is_taken_from_its_live_list(tmp_path: Path) -> None:
    # Its first list (at connect) is prompt, the sync's is late: READY, failed in the sync, and no
    # list change will ever come to bring it into the index.
    doc = config(tmp_path / "index.sqlite3", sync_timeout=0.3)
    doc["servers"]["slow"] = faulty("slow", "--slow-relist", "2")
    async with running(doc) as runtime:
        gateway = runtime.gateway
        status = await settled(gateway)
        assert "failed: slow" in status["message"], status
        assert gateway.upstreams["slow"].is_ready
        await eventually(
            lambda: gateway.index.get_tool_entry("slow.echo") is not None,
            timeout=10,
            what="the ready server's tools in the index",
        )
        states = {s["server_id"]: s["state"] for s in gateway.index_sync.describe()["servers"]}
        assert states["slow"] == "synced"
