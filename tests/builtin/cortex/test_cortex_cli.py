"""`nexus cortex add|observe|connect|search|report|show|import|serve` on a real folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cortex_support import NEXUS, child_env
from typer.testing import CliRunner

from mcp_nexus.cli.app import app

runner = CliRunner()


def nexus(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["cortex", *args], env={"NEXUS_CORTEX_DIR": ""})
    return result.exit_code, result.stdout, result.stderr


def test_the_command_line_covers_the_whole_cycle(knowledge_dir: Path) -> None:
    folder = ["--dir", str(knowledge_dir)]
    code, out, _ = nexus(
        "add", "tech_stack", "fastapi", "--type", "framework", "--name", "FastAPI",
        "--desc", "Python web framework", "--tag", "python", "--tag", "web", *folder,
    )  # fmt: skip
    assert code == 0 and json.loads(out)["tags"] == ["python", "web"]
    assert nexus("add", "concepts", "asgi", "-t", "concept", "-n", "ASGI", *folder)[0] == 0

    code, _, err = nexus("add", "concepts", "asgi", "-t", "concept", "-n", "Again", *folder)
    assert code == 1 and "[entity_exists]" in err
    code, _, err = nexus("add", "concepts", "../x", "-t", "concept", "-n", "X", *folder)
    assert code == 1 and "path separator" in err

    code, out, _ = nexus("observe", "fastapi", "Ships with OpenAPI docs", *folder)
    assert code == 0 and json.loads(out)["observations"][0]["text"] == "Ships with OpenAPI docs"
    code, out, _ = nexus("connect", "fastapi", "uses", "asgi", "--context", "server", *folder)
    assert code == 0 and json.loads(out)["dst"] == "asgi"
    code, _, err = nexus("connect", "fastapi", "uses", "ghost", *folder)
    assert code == 1 and "[entity_not_found]" in err

    code, out, _ = nexus("search", "fastap", "--limit", "1", *folder)
    assert code == 0 and [hit["id"] for hit in json.loads(out)["results"]] == ["fastapi"]
    code, out, _ = nexus("show", "fastapi", *folder)
    shown = json.loads(out)
    assert code == 0 and shown["relations"][0]["rel"] == "uses" and len(shown["observations"]) == 1
    code, _, err = nexus("show", "ghost", *folder)
    assert code == 1 and "no entity with id 'ghost'" in err
    code, out, _ = nexus("report", "--stale-days", "3", *folder)
    report = json.loads(out)
    assert code == 0 and report["nodes"] == 2 and report["edges"] == 1 and report["stale"]["days"] == 3


def test_cli_reports_damaged_files_as_warnings(knowledge_dir: Path) -> None:
    folder = ["--dir", str(knowledge_dir)]
    assert nexus("add", "concepts", "one", "-t", "concept", "-n", "One", *folder)[0] == 0
    with (knowledge_dir / "entities" / "concepts.jsonl").open("a") as handle:
        handle.write('{"kind":"entity","id":"tw')
    code, out, err = nexus("report", *folder)
    assert code == 0 and json.loads(out)["load_problems"]["count"] == 1
    assert "warning: entities/concepts.jsonl line 2: torn last line" in err


def test_serve_refuses_an_unusable_folder(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    result = subprocess.run(
        [str(NEXUS), "cortex", "serve", "--dir", str(not_a_folder)],
        capture_output=True, text=True, timeout=60, env=child_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 1 and result.stderr.startswith("error:"), result.stderr
    result = subprocess.run(
        [str(NEXUS), "cortex", "serve", "--dir", str(tmp_path / "kb"), "--categories", "good,Bad"],
        capture_output=True, text=True, timeout=60, env=child_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 1 and "category 'Bad' is not valid" in result.stderr
