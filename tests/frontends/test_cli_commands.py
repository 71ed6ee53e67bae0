"""`nexus tools`, `nexus call` and `nexus servers` against real servers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.processes import TESTS, VENV_BIN, child_env

CONFIG = {
    "gateway": {"include_builtins": False},
    "servers": {
        "demo": {"transport": "embedded", "module": "support.demo_server:create_server", "namespace": ""},
        "other": {
            "command": sys.executable,
            "args": ["-m", "support.demo_server", "other"],
            "env": {"PYTHONPATH": str(TESTS)},
        },
        "broken": {"command": "/nonexistent/server"},
    },
}


def nexus(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(CONFIG))
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args, "--config", str(path)],
        capture_output=True,
        text=True,
        env=child_env(COLUMNS="200"),
        timeout=120,
    )


def test_tools_lists_every_tool_with_its_server(tmp_path: Path) -> None:
    done = nexus(tmp_path, "tools", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["echo"]["server"] == "demo" and rows["echo"]["fallbacks"] == []
    assert rows["other.add"]["server"] == "other"
    assert "broken" in done.stderr  # the failed server is reported, the rest still listed


def test_call_with_key_value_and_json_arguments(tmp_path: Path) -> None:
    done = nexus(tmp_path, "call", "other.add", "--arg", "a=2", "--arg", "b=40")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"][0]["text"] == "42"
    done = nexus(tmp_path, "call", "echo", "--json", '{"text": "hi"}')
    assert json.loads(done.stdout)["content"][0]["text"] == "demo: hi"


def test_call_errors_are_clear(tmp_path: Path) -> None:
    unknown = nexus(tmp_path, "call", "nope.tool")
    assert unknown.returncode == 1 and "Unknown tool: nope.tool" in unknown.stderr
    bad_json = nexus(tmp_path, "call", "echo", "--json", "{oops")
    assert bad_json.returncode == 2 and "--json is not valid JSON" in bad_json.stderr
    tool_error = nexus(tmp_path, "call", "fail", "--arg", "reason=boom")
    assert tool_error.returncode == 1 and "boom" in tool_error.stdout


def test_servers_shows_state_and_errors(tmp_path: Path) -> None:
    done = nexus(tmp_path, "servers")
    assert done.returncode == 1, done.stderr  # a private gateway whose server cannot start: a failure
    # Piped: a header line, then one tab-separated line per server.
    lines = {line.split("\t")[0]: line for line in done.stdout.splitlines()[1:]}
    assert "READY" in lines["demo"] and "READY" in lines["other"]
    assert "ERROR" in lines["broken"] and "nonexistent" in lines["broken"]
