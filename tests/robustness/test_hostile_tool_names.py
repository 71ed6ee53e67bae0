"""A hostile upstream's tool names behind a real gateway (issue: a bare-named server taking over
another server's tools; unvalidated names listed, callable and printed raw).

The hostile server (hostile_names_server.py, a real process) runs with `"namespace": ""` and
lists `good.fast`, the built-ins' `get_system_info` and `cortex.add_entity`, the gateway's own
names, and names with NUL, ESC, newline, U+202E, a zero-width space, 5,000 characters or none.
It sorts before `good`, so a priority tie would hand it `good.fast`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_nexus.gateway import Gateway
from robustness.hostile_names_server import BAD_NAMES
from support.gateway import running

SERVER = str(Path(__file__).with_name("hostile_names_server.py"))
pytestmark = pytest.mark.timeout(20)


def document(tmp: Path, **hostile: Any) -> dict[str, Any]:
    return {
        "gateway": {
            "include_builtins": False,
            "index": {"path": str(tmp / "index.json")},
            "rate_limit": "1000/second",  # 20 calls in a row must all reach a server
        },
        "servers": {
            "device": {
                "transport": "embedded",
                "module": "mcp_nexus.builtin.device.server:create_server",
                "options": {"audio_backend": "none", "backlight_root": str(tmp / "no-backlight")},
                "namespace": "",
                "priority": 100,
            },
            "cortex": {
                "transport": "embedded",
                "module": "mcp_nexus.builtin.cortex.server:create_server",
                "options": {"knowledge_dir": str(tmp / "kb")},
            },
            "good": {"command": sys.executable, "args": [SERVER, "good"]},
            "evil": {"command": sys.executable, "args": [SERVER, "hostile"], "namespace": "", **hostile},
        },
    }


def candidates(gateway: Gateway, name: str) -> list[str]:
    return [route.upstream.name for route in gateway.catalog.tools[name].candidates]


async def answered_by(gateway: Gateway, name: str) -> str:
    result = await gateway.call_tool_result(name, {})
    assert result.meta is not None
    return str(result.meta["nexus/server"])


async def test_a_bare_named_server_cannot_take_other_servers_tools(tmp_path: Path) -> None:
    async with running(document(tmp_path), http=True) as runtime:
        gateway = runtime.gateway
        assert [await answered_by(gateway, "good.fast") for _ in range(20)] == ["good"] * 20
        assert candidates(gateway, "good.fast") == ["good"]
        assert candidates(gateway, "get_system_info") == ["device"]
        assert candidates(gateway, "cortex.add_entity") == ["cortex"]
        assert "nexus.run_goal" not in gateway.catalog.tools
        sandbox = gateway.catalog.tools["python_sandbox"]
        assert sandbox.local is not None and sandbox.candidates == ()
        assert gateway.catalog.offline_owner("good.fast") is None
        # harmless names stay: one in the spec's characters, one outside them but printable
        assert await answered_by(gateway, "hostile_ok") == "evil"
        assert candidates(gateway, "天气") == ["evil"]

        listed = {tool.name for tool in gateway.catalog.tool_list}
        for bad in BAD_NAMES:
            assert bad not in listed and bad not in gateway.catalog.tools
            with pytest.raises(Exception) as refused:
                await gateway.call_tool_result(bad, {})
            assert "hostile:" not in str(refused.value)
        assert await gateway.index_sync.wait_settled(10)
        indexed = {entry.name for entry in gateway.index.snapshot.entries() if entry.server_id == "evil"}
        assert indexed == {"hostile_ok", "天气"}  # nothing refused reaches the saved index either

        base = runtime.url.removesuffix("/mcp")
        async with httpx2.AsyncClient(base_url=base, timeout=10) as http:  # the gateway runs on this loop
            answer = await http.get("/api/servers")
            metrics = (await http.get("/metrics")).text
        assert answer.status_code == 200
        for raw in ("\x00", "\x1b", "\u202e", "\u200b"):
            assert raw not in answer.text
        servers = {row["name"]: row for row in answer.json()["servers"]}
        refused_rows = {row["tool"]: row["reason"] for row in servers["evil"]["refused_tools"]}
        assert "namespace 'good.'" in refused_rows["good.fast"]
        assert "built-in server 'device'" in refused_rows["get_system_info"]
        assert "namespace 'cortex.'" in refused_rows["cortex.add_entity"]
        assert "gateway" in refused_rows["nexus.run_goal"] and "gateway" in refused_rows["python_sandbox"]
        assert "control character (\\x00)" in refused_rows["nul\\x00name"]
        assert "esc\\x1b[31mred" in refused_rows and "new\\x0aline" in refused_rows
        assert "format character (\\u202e)" in refused_rows["rtl\\u202egnp.exe"]
        assert "zero\\u200bwidth" in refused_rows
        assert "5000 characters long" in refused_rows["x" * 80 + "... (5000 characters)"]
        assert "empty" in refused_rows[""]
        assert len(refused_rows) == 5 + len(BAD_NAMES)
        assert servers["good"]["refused_tools"] == [] and servers["device"]["refused_tools"] == []

        assert "\x1b" not in metrics and "\u202e" not in metrics


async def test_the_config_can_allow_a_fallback_explicitly(tmp_path: Path) -> None:
    hostile = {
        "priority": 5,  # below good (stdio: 10) and device (100): a fallback
        "tools": {"allow": ["good.fast", "get_system_info", "cortex.add_entity", "hostile_ok"]},
        "shadows": ["good.fast"],
    }
    async with running(document(tmp_path, **hostile)) as runtime:
        gateway = runtime.gateway
        assert candidates(gateway, "get_system_info") == ["device", "evil"]  # named in `tools`
        assert candidates(gateway, "good.fast") == ["good", "evil"]  # named in `shadows`
        # `tools` alone never lets a name into another server's namespace
        assert candidates(gateway, "cortex.add_entity") == ["cortex"]
        refused = gateway.upstreams["evil"].refused_tools
        assert set(refused) == {"cortex.add_entity"}
        assert await answered_by(gateway, "good.fast") == "good"
        await gateway.servers.stop("good")
        result = await gateway.call_tool_result("good.fast", {})
        assert result.meta and result.meta["nexus/server"] == "evil"
        assert result.content[0].text == "hostile:good.fast"  # type: ignore[union-attr]


async def test_a_saved_index_with_an_empty_name_still_loads(tmp_path: Path) -> None:
    saved = {
        "version": "1.0.0",
        "last_sync": "2999-01-01T00:00:00Z",  # fresh: served as saved, no sync at start
        "servers": [
            {
                "server_id": "good",
                "tools": [
                    {"tool_name": "", "name": "", "description": "left by an older gateway"},
                    {"tool_name": "esc\x1b", "name": "good.esc\x1b"},
                    {"tool_name": "fast", "name": "good.fast", "description": "kept"},
                ],
            }
        ],
    }
    (tmp_path / "index.json").write_text(json.dumps(saved), encoding="utf-8")
    doc = document(tmp_path)
    doc["gateway"]["index"]["cache_ttl_seconds"] = 10**12
    doc["servers"]["good"]["enabled"] = False  # never live: what the index holds for it is what was saved
    async with running(doc) as runtime:
        gateway = runtime.gateway
        assert await gateway.index_sync.wait_settled(10)
        status = gateway.index.status
        assert status.save_error is None and status.source in ("cache", "sync"), status.message
        saved_good = [e for e in gateway.index.snapshot.entries() if e.server_id == "good"]
        assert [(e.name, e.description) for e in saved_good] == [("good.fast", "kept")]
