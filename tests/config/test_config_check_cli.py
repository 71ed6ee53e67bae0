"""The real `nexus config check` (verdict, table, exit 0/1/2, --json) and `nexus servers --config` exit status."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.processes import VENV_BIN, child_env


def nexus(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args], capture_output=True, text=True, env=child_env(**env), timeout=60
    )


def write(tmp_path: Path, doc: dict[str, Any], name: str = "nexus.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def servers_doc(command: str) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "port": 9000},
        "mcpServers": {
            "calc": {
                "command": command,
                "env": {"LOG_LEVEL": "debug", "OPENAI_API_KEY": "sk-abcdefghijklmnop1234"},
            },
            "remote": {"type": "http", "url": "https://h.test/mcp?token=abc&v=2"},
        },
        "llm": {"api_key_env": "MY_KEY"},
    }


def test_a_verdict_first_then_the_table_and_exit_1_for_a_command_not_on_path(tmp_path: Path) -> None:
    done = nexus("config", "check", str(write(tmp_path, servers_doc("calc-server"))), PATH=str(tmp_path))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "# config has 1 problem:",
        "#   - mcpServers.calc.command: 'calc-server' is not found on PATH: the server cannot start",
    ]
    rows = {line.split("\t")[0]: line.split("\t") for line in lines if "\t" in line}
    assert rows["server"] == ["server", "transport", "command / url / module", "found", "overrides"]
    assert rows["calc"] == [
        "calc",
        "stdio",
        "calc-server",
        "NO",
        "env.LOG_LEVEL=debug, env.OPENAI_API_KEY=***",
    ]
    assert rows["remote"] == ["remote", "http", "https://h.test/mcp?token=***&v=2", "-", ""]
    assert rows["gateway.port"] == ["gateway.port", "9000"] and rows["llm.api_key_env"] == [
        "llm.api_key_env",
        "MY_KEY",
    ]
    assert "sk-abcdefghijklmnop1234" not in done.stdout and len(lines) < 20  # short, not every default


def test_a_command_found_on_path_makes_it_ok(tmp_path: Path) -> None:
    program = tmp_path / "calc-server"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    done = nexus("config", "check", str(write(tmp_path, servers_doc("calc-server"))), PATH=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        done.stdout.splitlines()[0]
        == "# config OK: 2 servers (1 http, 1 stdio), mcpServers format, stores: memory"
    )
    assert f"calc\tstdio\tcalc-server\tyes: {program}\t" in done.stdout


def test_json_gives_the_verdict_and_the_table_and_an_invalid_document_exits_2(tmp_path: Path) -> None:
    done = nexus("config", "check", "--json", str(write(tmp_path, servers_doc("sh"))))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["format"] == "mcpServers" and report["problems"] == []
    assert [row["name"] for row in report["servers"]] == ["calc", "remote"]
    assert report["settings"] == {"gateway": {"port": 9000}, "llm": {"api_key_env": "MY_KEY"}}
    bad = write(tmp_path, {"mcpServers": {"t": {"type": "sse"}}}, "bad.json")
    done = nexus("config", "check", "--json", str(bad))
    assert done.returncode == 2
    invalid = json.loads(done.stdout)
    assert not invalid["ok"] and invalid["problems"][0]["path"] == "mcpServers.t"
    assert f"invalid config {bad}" in done.stderr


def test_servers_with_config_exits_1_when_a_server_is_in_error(tmp_path: Path) -> None:
    # The built-in servers start in-process (READY, quickly); the broken one cannot start at all.
    broken = {"command": str(tmp_path / "missing-server"), "restart": {"max_attempts": 1, "backoff_min": 0.1}}
    good_doc = write(tmp_path, {"mcpServers": {}}, "good.json")
    bad_doc = write(tmp_path, {"mcpServers": {"broken": broken}}, "bad.json")
    runs = {
        name: subprocess.Popen(
            [str(VENV_BIN / "nexus"), "servers", "--config", str(path), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(NEXUS_DATA_DIR=str(tmp_path / f"data-{name}")),  # one each: they run at once
        )
        for name, path, extra in (("good", good_doc, ["--json"]), ("bad", bad_doc, []))
    }
    results = {name: (proc.communicate(timeout=60), proc.returncode) for name, proc in runs.items()}
    (good_out, good_err), good_code = results["good"]
    assert good_code == 0, good_err
    assert {row["name"]: row["state"] for row in json.loads(good_out)} == {
        "device": "READY",
        "cortex": "READY",
    }
    (bad_out, _), bad_code = results["bad"]
    assert bad_code == 1 and "broken\tstdio\tERROR" in bad_out and "device\tembedded\tREADY" in bad_out
