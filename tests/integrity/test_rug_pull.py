"""Done when: a real server that rewrites a tool's description without telling anyone has that tool
quarantined by the next health check, and an operator's approval brings it back.

The upstream is tests/support/rug_pull_server.py (a real stdio process) with `health.interval: 1`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_nexus.errors import PermissionDeniedError
from mcp_nexus.events import ListChanged
from support.gateway import running
from support.polling import eventually
from support.processes import TESTS, VENV_BIN, child_env, free_port, wait_for_http
from support.processes import running as running_process


def _rug_pull(*flags: str, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "command": sys.executable,
        "args": ["-m", "support.rug_pull_server", *flags],
        "env": {"PYTHONPATH": str(TESTS)},
        "health": {"interval": 1, "timeout": 2},
        "rate_limit": None,
    }
    entry.update(fields)
    return entry


def _document(**servers: dict[str, Any]) -> dict[str, Any]:
    return {"gateway": {"include_builtins": False, "offload_threshold": None}, "servers": servers}


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))  # pins of this test only


@pytest.mark.parametrize("probe", ["ping", "tools/list"])
async def test_a_silent_rewrite_is_quarantined_by_the_next_health_check(probe: str) -> None:
    flags = ["--rewrite-after", "1.5"] + (["--no-ping"] if probe == "tools/list" else [])
    async with running(_document(notes=_rug_pull(*flags)), http=True) as runtime:
        gateway = runtime.gateway
        told: list[str] = []
        gateway.events.subscribe(ListChanged, lambda event: told.append(event.kind))
        assert "notes.notes" in gateway.catalog.tools
        text = await gateway.call_tool("notes.notes", {"title": "a"})
        assert "notes of a" in str(text)

        await eventually(lambda: "notes.notes" not in gateway.catalog.tools, 6, "the rewritten tool held")
        assert "tools" in told  # clients were told the list changed
        assert "notes.notes" not in {tool.name for tool in gateway.catalog.tool_list}
        assert "notes.clock" in gateway.catalog.tools  # the untouched tool stays
        with pytest.raises(PermissionDeniedError) as refused:
            await gateway.call_tool("notes.notes", {"title": "a"})
        message = str(refused.value)
        assert "'notes.notes'" in message and "server 'notes'" in message and "(description)" in message
        assert "nexus tools approve notes.notes" in message

        base = runtime.url.removesuffix("/mcp")
        async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
            status = (await http.get("/api/integrity")).json()
            (hold,) = status["pending"]
            assert hold["server"] == "notes" and hold["tool"] == "notes" and hold["quarantined"]
            assert hold["changed"] == ["description"]
            assert {f["kind"] for f in hold["findings"]} >= {"instruction_block", "sensitive_file"}
            assert "<IMPORTANT>" in hold["current"]["description"]
            assert "<IMPORTANT>" not in hold["pinned"]["description"]
            assert status["flags_total"]["instruction_block"] == 1
            scraped = (await http.get("/metrics")).text
            assert 'nexus_tool_integrity_flags_total{kind="instruction_block"} 1.0' in scraped
            assert 'nexus_tool_integrity_held{mode="quarantine"} 1.0' in scraped
            servers = (await http.get("/api/servers")).json()
            assert any(r["tool"] == "notes" for s in servers["servers"] for r in s.get("refused_tools", []))

            told.clear()
            approved = (await http.post("/api/integrity/approve", json={"name": "notes.notes"})).json()
            assert approved["approved"] == [{"server": "notes", "tool": "notes", "exposed": "notes.notes"}]
            assert approved["pending"] == 0
        assert "tools" in told
        assert "notes.notes" in gateway.catalog.tools
        assert "notes of b" in str(await gateway.call_tool("notes.notes", {"title": "b"}))


async def test_a_renamed_rewrite_stays_quarantined() -> None:
    async with running(_document(notes=_rug_pull("--rewrite-after", "1.2", "--rename"))) as runtime:
        gateway = runtime.gateway
        await eventually(lambda: "notes.notes" not in gateway.catalog.tools, 6, "the old name gone")
        # notes2 is new, but its definition reads as hostile (the scan): held at first sight.
        assert "notes.notes2" not in gateway.catalog.tools
        hold = gateway.catalog.quarantined("notes.notes2")
        assert hold is not None and hold.findings


async def test_the_lists_ttl_makes_it_listed_again_without_a_health_check(tmp_path: Path) -> None:
    count = tmp_path / "lists"
    server = _rug_pull("--modern", "--ttl-ms", "300", "--count-file", str(count), health={"interval": 0})
    async with running(_document(notes=server)) as runtime:
        took = await eventually(
            lambda: count.exists() and len(count.read_text().splitlines()) >= 4, 6, "re-lists"
        )
        lists = len(count.read_text().splitlines())
        assert runtime.gateway.upstreams["notes"].lists.tools_expiry.fired >= 2
    # A 300 ms ttl is raised to limits.list_refresh_interval (1 s): never a busy loop.
    assert lists <= took + 2


def test_nexus_tools_pending_and_approve_on_a_served_gateway(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "nexus.json"
    doc = _document(notes=_rug_pull("--rewrite-after", "1"))
    doc["gateway"]["port"] = port
    config.write_text(json.dumps(doc))
    base = f"http://127.0.0.1:{port}"
    args = [str(VENV_BIN / "nexus"), "serve", "--wait-ready", "--no-watch", "-c", str(config)]
    env = child_env(NEXUS_DATA_DIR=str(tmp_path / "data"))
    with running_process(args, env=env, log=tmp_path / "gateway.log") as proc:
        wait_for_http(f"{base}/healthz", proc=proc)

        def nexus(*words: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(VENV_BIN / "nexus"), *words, "--url", base],
                capture_output=True,
                text=True,
                env=child_env(COLUMNS="200"),
                timeout=30,
            )

        def listed() -> set[str]:
            return {row["name"] for row in httpx2.get(f"{base}/api/tools", timeout=5).json()["tools"]}

        deadline = time.monotonic() + 8
        while "notes.notes" in listed() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "notes.notes" not in listed()
        pending = nexus("tools", "pending")
        assert pending.returncode == 0, pending.stderr
        assert "notes.notes  QUARANTINED" in pending.stdout and "(description)" in pending.stdout
        diff = nexus("tools", "diff", "notes.notes")
        assert diff.returncode == 0 and "+" in diff.stdout and "<IMPORTANT>" in diff.stdout
        approve = nexus("tools", "approve", "notes.notes")
        assert approve.returncode == 0, approve.stderr
        assert "approved notes.notes" in approve.stdout
        assert "notes.notes" in listed()
        again = nexus("tools", "approve", "notes.nothing")
        assert again.returncode == 1 and "not held" in again.stderr
