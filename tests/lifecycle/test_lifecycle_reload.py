"""Hot reload against real processes: what restarts, what applies live, bad files, removed servers.

Which fields need a restart, field by field, is tested in tests/upstream/test_config_diff.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from lifecycle.faults import document, faulty, live_children, text
from mcp_nexus.config.load import config_from_document
from mcp_nexus.config.watch import ConfigSource, ConfigWatcher
from mcp_nexus.gateway import Gateway
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running_gateway
from support.polling import eventually


async def reload(gw: Gateway, servers: dict[str, Any]) -> Any:
    config, _ = config_from_document(document(servers))
    return await gw.reload(config)


async def test_reload_restarts_only_what_changed_its_connection() -> None:
    servers = {"a": faulty("a"), "b": faulty("b"), "c": faulty("c")}
    async with running_gateway(document(servers)) as gw:
        pids = {name: u.pid for name, u in gw.upstreams.items()}
        changed = {
            "a": faulty("a", env={"PYTHONPATH": servers["a"]["env"]["PYTHONPATH"], "EXTRA": "1"}),  # restart
            "b": faulty("b", namespace="bee", priority=70, tools={"deny": ["crash"]}),  # live
            "c": faulty("c"),  # unchanged
        }
        report = await reload(gw, changed)
        assert report.restarted == ["a"] and report.live == ["b"] and not report.added
        assert gw.upstreams["a"].pid != pids["a"] and gw.upstreams["a"].state == UpstreamState.READY
        assert gw.upstreams["b"].pid == pids["b"] and gw.upstreams["c"].pid == pids["c"]
        await eventually(lambda: "bee.echo" in gw.catalog.tools, what="the new namespace")
        assert "b.echo" not in gw.catalog.tools and "bee.crash" not in gw.catalog.tools
        assert gw.catalog.tools["bee.echo"].candidates[0].upstream.config.effective_priority == 70
        assert text(await gw.call_tool("bee.echo", {"text": "live"})) == "b: live"


async def test_reload_adds_and_removes_servers() -> None:
    async with running_gateway(document({"keep": faulty("keep"), "gone": faulty("gone")})) as gw:
        gone_pid = gw.upstreams["gone"].pid
        report = await reload(gw, {"keep": faulty("keep"), "new": faulty("new")})
        assert report.added == ["new"] and report.removed == ["gone"]
        assert set(gw.upstreams) == {"keep", "new"} and set(gw.supervisors) == {"keep", "new"}
        await eventually(lambda: "new.echo" in gw.catalog.tools and "gone.echo" not in gw.catalog.tools)
        assert gone_pid not in {p.pid for p in live_children()}
        assert text(await gw.call_tool("new.echo", {"text": "hi"})) == "new: hi"


async def test_the_watcher_applies_saves_and_rejects_broken_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "mcp_nexus.config.watch")
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(document({"a": faulty("a")})))
    source = ConfigSource(path)
    # The watcher is the test's own (a short debounce, its counters read): the runtime watches nothing here.
    async with running_gateway(source.load()) as gw:
        watcher = ConfigWatcher(source, gw, debounce_ms=300)
        watcher.start()
        try:
            await watcher.wait_ready()
            # Several saves in a burst are debounced into one reload.
            for name in ("b", "c"):
                path.write_text(json.dumps(document({"a": faulty("a"), name: faulty(name)})))
                await asyncio.sleep(0.05)
            await eventually(lambda: watcher.reloads >= 1, what="the last save applied")
            await asyncio.sleep(0.5)  # no second reload follows
            assert watcher.reloads == 1 and "b" not in gw.upstreams and "c" in gw.upstreams

            path.write_text('{"servers": {oops')
            await eventually(lambda: watcher.rejected == 1, what="bad JSON rejected")
            assert "not valid JSON" in caplog.text and "running config stays in force" in caplog.text
            path.write_text(json.dumps(document({"a": faulty("a", priority="high")})))
            await eventually(lambda: watcher.rejected == 2, what="invalid field rejected")
            assert "priority" in (watcher.last_error or "")
            assert set(gw.upstreams) == {"a", "c"}  # the running config is still in force
            assert gw.upstreams["c"].state == UpstreamState.READY

            path.write_text(json.dumps(document({"a": faulty("a")})))  # c removed from the file
            await eventually(lambda: watcher.reloads == 2, what="c removed")
            assert "c" not in gw.upstreams and watcher.last_error is None
        finally:
            await watcher.stop()
