"""The real `nexus import`: a home and a project folder laid out like a user's, the config it writes,
`--dry-run`, `--from`, and its refusals (exit 1 nothing found, 2 output exists or unreadable --from)."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

from support.processes import VENV_BIN, child_env


def run_nexus(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env(HOME=str(home))
    env.pop("XDG_CONFIG_HOME", None)
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def nexus_import(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_nexus(home, cwd, "import", *args)


def put(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_import_writes_one_config_that_nexus_config_check_accepts(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    put(home / ".config/Claude/claude_desktop_config.json", {"mcpServers": {"shell": {"command": "sh"}}})
    put(home / ".cursor/mcp.json", {"mcpServers": {"shell": {"command": "sh", "args": ["-c", "x"]}}})
    put(project / ".mcp.json", {"mcpServers": {"old": {"command": "sh", "disabled": True}}})
    done = nexus_import(home, project, "--output", "nexus.json")
    assert done.returncode == 0, done.stderr
    assert "took 2 servers:" in done.stdout and "shell-cursor: from cursor (user)" in done.stdout
    assert "old: claude-code (project)" in done.stdout and ": disabled" in done.stdout
    assert "wrote nexus.json" in done.stdout
    written = project / "nexus.json"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600  # client configs hold API keys
    assert set(json.loads(written.read_text())["servers"]) == {"shell", "shell-cursor"}
    check = run_nexus(home, project, "config", "check", "--json", str(written))
    assert check.returncode == 0, check.stdout + check.stderr
    assert {row["name"] for row in json.loads(check.stdout)["servers"]} >= {"shell", "shell-cursor"}
    # a second run refuses to replace it, --force does
    again = nexus_import(home, project, "--output", "nexus.json")
    assert again.returncode == 2 and "pass --force" in again.stderr
    assert nexus_import(home, project, "--output", "nexus.json", "--force").returncode == 0


def test_dry_run_prints_the_config_and_from_reads_only_the_named_file(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    put(home / ".cursor/mcp.json", {"mcpServers": {"cursor-one": {"command": "sh"}}})
    project.mkdir()
    named = put(
        tmp_path / "elsewhere" / "mcp_config.json", {"mcpServers": {"w": {"serverUrl": "https://w.test/mcp"}}}
    )
    done = nexus_import(home, project, "--from", str(named), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"servers": {"w": {"transport": "http", "url": "https://w.test/mcp"}}}
    assert f"w: from windsurf {named}" in done.stderr and not (project / "nexus.json").exists()
    missing = nexus_import(home, project, "--from", str(tmp_path / "nope.json"), "--dry-run")
    assert missing.returncode == 2 and "nope.json" in missing.stderr


def test_nothing_found_exits_1_and_names_the_places_looked_at(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True)
    done = nexus_import(home, project, "--dry-run")
    assert done.returncode == 1 and "nothing to import" in done.stderr
    assert str(home / ".codeium/windsurf/mcp_config.json") in done.stderr
