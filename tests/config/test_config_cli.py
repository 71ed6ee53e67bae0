"""`nexus config check --full` prints the normalised config with secrets masked, or the errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.processes import VENV_BIN, child_env


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args], capture_output=True, text=True, env=child_env(), timeout=60
    )


def test_config_check_prints_normalised_config_without_secrets(tmp_path: Path) -> None:
    path = tmp_path / "claude.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "remote": {
                        "type": "http",
                        "url": "https://h.test/mcp",
                        "headers": {"Authorization": "Bearer s3cr3t"},
                    },
                    "seed": {"command": "sh", "apiKey": "k3y"},
                }
            }
        )
    )
    done = run("config", "check", "--full", str(path))
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["source_format"] == "mcpServers"
    assert printed["servers"]["remote"]["transport"] == "http"
    assert "s3cr3t" not in done.stdout and "k3y" not in done.stdout
    assert printed["servers"]["remote"]["headers"]["Authorization"] == "***"


def test_config_check_reports_errors_with_exit_code_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"mcpServers": {"t": {"type": "sse"}}}))
    done = run("config", "check", str(path))
    assert done.returncode == 2
    assert "mcpServers.t" in done.stderr and "needs 'url'" in done.stderr
