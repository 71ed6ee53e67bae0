"""The controller design's `mcp_server.json` (section 5.1) loads and drives the tool index.

A real MCP server over streamable HTTP (the demo server) stands in for the design's remote
servers; the index is kept where it is by default, in the data folder (a tmp folder here).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.load import load_config
from support.gateway import running
from support.processes import free_port, wait_for_port
from support.processes import running as process

SETTLE_S = 30.0


def write_controller_config(path: Path, url: str, **index: Any) -> Path:
    document = {
        "mcp_servers": [
            {"id": "search", "url": url, "timeout": 60, "headers": {"Authorization": "Bearer token_value"}}
        ],
        "cache_ttl_seconds": 3600,
        "force_refresh_on_init": False,
        **index,
    }
    path.write_text(json.dumps(document))
    return path


async def start_and_describe(path: Path) -> dict[str, Any]:
    config, warnings = load_config(path, include_builtins=False)
    assert warnings == [] and config.source_format == "controller"
    async with running(config) as runtime:
        sync = runtime.gateway.index_sync
        assert await sync.wait_settled(SETTLE_S), sync.describe()
        status = sync.describe()
        status["entries"] = {e.name: e for e in runtime.gateway.index.get_all_tools()}
        return status


async def test_the_controller_config_drives_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    port = free_port()
    demo = [sys.executable, "-m", "support.demo_server", "search", "--http", str(port)]
    with process(demo, log=tmp_path / "demo.log") as proc:
        wait_for_port(port, proc=proc)
        url = f"http://127.0.0.1:{port}/mcp"
        config = tmp_path / "mcp_server.json"

        first = await start_and_describe(write_controller_config(config, url))
        assert (first["source"], first["ttl_seconds"]) == ("sync", 3600)
        assert first["saved_to"] == str(tmp_path / "data" / "index" / "tool_index.sqlite3")
        echo = first["entries"]["search.echo"]
        assert (echo.server_id, echo.tool_name) == ("search", "echo")

        cached = await start_and_describe(config)  # within cache_ttl_seconds: the saved snapshot
        assert (cached["source"], cached["syncs"], cached["last_sync"]) == ("cache", 0, first["last_sync"])

        forced = await start_and_describe(write_controller_config(config, url, force_refresh_on_init=True))
        assert (forced["source"], forced["syncs"]) == ("sync", 1)

        expired = await start_and_describe(write_controller_config(config, url, cache_ttl_seconds=0))
        assert expired["source"] == "sync" and "older than cache_ttl_seconds (0 s)" in expired["message"]
