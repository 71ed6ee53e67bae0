"""Two gateways sharing tool pins through a real redis-server, each with its own data folder and
its own real stdio upstream (tests/support/rug_pull_server.py, the same command on both).

The test rewrites the upstream's `notes` tool through the file named by $RUG_PULL_TOOL_FILE
(no list_changed is sent: the gateways see it at their next health check, every second).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_nexus.runtime import Runtime
from support.gateway import running
from support.polling import eventually
from support.processes import TESTS
from support.redis_server import RedisServer

HONEST = "Return the notes saved under a title."
CHANGED = "Return the notes saved under a title, newest first."  # nothing the scan flags


def _set_tool(path: Path, description: str, name: str = "notes") -> None:
    path.write_text(json.dumps({"name": name, "description": description}), encoding="utf-8")


def _document(redis_url: str, prefix: str, tool_file: Path) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "offload_threshold": None},
        # timeout: sharing is checked here, not speed (tests/scale/test_stores_redis.py, `document`).
        "stores": {"default": redis_url, "key_prefix": prefix, "retry_after": 0.5, "timeout": 5},
        "servers": {
            "notes": {
                "command": sys.executable,
                "args": ["-m", "support.rug_pull_server"],
                "env": {"PYTHONPATH": str(TESTS), "RUG_PULL_TOOL_FILE": str(tool_file)},
                "health": {"interval": 1, "timeout": 2},
                "rate_limit": None,
            }
        },
    }


@asynccontextmanager
async def replica(
    document: dict[str, Any], data: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Runtime]:
    # Each replica's data folder (its local pin file) is its own: only Redis connects them.
    # The folder is read while the gateway starts, so the variable may change for the next one.
    monkeypatch.setenv("NEXUS_DATA_DIR", str(data))
    async with running(document, http=True) as runtime:
        yield runtime


def _listed(runtime: Runtime) -> Callable[[], bool]:
    return lambda: "notes.notes" in runtime.gateway.catalog.tools


async def test_replicas_share_pins_holds_renames_and_approvals(
    redis: RedisServer, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool_file = tmp_path / "notes-tool.json"
    _set_tool(tool_file, HONEST)
    document = _document(redis.url, prefix, tool_file)
    async with replica(document, tmp_path / "a", monkeypatch) as a:
        assert _listed(a)()
        _set_tool(tool_file, CHANGED)
        async with replica(document, tmp_path / "b", monkeypatch) as b:
            # B's first sight is the changed definition: held, because A pinned the honest one.
            assert not _listed(b)()
            hold = b.gateway.catalog.quarantined("notes.notes")
            assert hold is not None and hold.reason == "changed" and not hold.findings
            assert hold.pinned is not None and hold.pinned["description"] == HONEST
            await eventually(lambda: not _listed(a)(), 6, "A's next health check holds it too")

            # The server renames the held tool: on both replicas the new name stays held.
            _set_tool(tool_file, CHANGED, "notes_renamed")
            for runtime in (a, b):
                catalog = runtime.gateway.catalog
                await eventually(lambda c=catalog: c.quarantined("notes.notes_renamed"), 6, "the rename")
                renamed = catalog.quarantined("notes.notes_renamed")
                assert renamed is not None and renamed.reason == "renamed" and renamed.like == "notes.notes"
                assert "notes.notes_renamed" not in catalog.tools

            # Approved on A (admin API): B lists it again without an approval of its own.
            base = a.url.removesuffix("/mcp")
            async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
                answer = await http.post("/api/integrity/approve", json={"name": "notes.notes_renamed"})
                approved_at = time.monotonic()
                assert answer.status_code == 200, answer.text
                assert answer.json()["pending"] == 0
                stores = (await http.get("/api/stores")).json()
                assert stores["kinds"]["pins"] == "redis" and stores["pins"]["unpushed"] <= 1
                integrity = (await http.get("/api/integrity")).json()
                assert integrity["path"].startswith("redis://127.0.0.1:") and ":pins:pin" in integrity["path"]
            assert "notes.notes_renamed" in a.gateway.catalog.tools
            took = await eventually(
                lambda: "notes.notes_renamed" in b.gateway.catalog.tools, 3, "B releases A's approval"
            )
            assert b.gateway.catalog.quarantined("notes.notes_renamed") is None
            # Sooner than B's own poll (5 s): it came through the events channel.
            assert time.monotonic() - approved_at < 2.5, took
