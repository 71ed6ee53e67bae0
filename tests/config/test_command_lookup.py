"""A stdio command is looked up as the gateway will at start, with hints for where it only seems to be."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp_nexus.config.command_lookup import lookup_command


def program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_a_name_is_found_on_path_and_the_server_env_path_wins(tmp_path: Path) -> None:
    found = program(tmp_path / "bin" / "calc-server")
    environ = {"PATH": str(tmp_path / "bin")}
    hit = lookup_command("calc-server", env={}, cwd=None, config_folder=None, environ=environ)
    assert (hit.found, hit.path, hit.problem) == (True, str(found), None)
    miss = lookup_command(
        "calc-server", env={"PATH": str(tmp_path)}, cwd=None, config_folder=None, environ=environ
    )
    assert not miss.found and miss.problem == "'calc-server' is not found on PATH (the server's env.PATH)"


def test_a_name_only_in_the_venv_or_beside_the_config_is_a_problem_with_a_hint(tmp_path: Path) -> None:
    venv_program = Path(sys.executable).parent / "ruff"  # installed in the venv beside python
    assert venv_program.exists()
    empty = {"PATH": str(tmp_path / "nothing")}
    miss = lookup_command("ruff", env={}, cwd=None, config_folder=None, environ=empty)
    assert not miss.found
    assert (
        miss.problem is not None and f"it is in {venv_program.parent}, which is not on PATH" in miss.problem
    )
    beside = program(tmp_path / "conf" / "my-server")
    miss = lookup_command("my-server", env={}, cwd=None, config_folder=beside.parent, environ=empty)
    assert (
        miss.problem
        == f"'my-server' is not found on PATH; it is beside the config file: write the full path {str(beside)!r}"
    )


def test_a_path_is_taken_from_cwd_or_the_start_folder_not_the_config_folder(tmp_path: Path) -> None:
    script = program(tmp_path / "project" / "server.sh")
    start = tmp_path / "elsewhere"
    start.mkdir()
    via_cwd = lookup_command(
        "./server.sh", env={}, cwd=str(script.parent), config_folder=None, start_folder=start
    )
    assert via_cwd.found and via_cwd.path == str(script.parent / "./server.sh")
    from_start = lookup_command(
        "./server.sh", env={}, cwd=None, config_folder=script.parent, start_folder=start
    )
    assert not from_start.found and from_start.problem is not None
    assert "not from the config file's folder" in from_start.problem and str(script) in from_start.problem


def test_not_executable_a_folder_and_a_tilde_are_named(tmp_path: Path) -> None:
    plain = tmp_path / "server.py"
    plain.write_text("print()\n")
    answer = lookup_command(str(plain), env={}, cwd=None, config_folder=None)
    assert not answer.found and answer.problem is not None and "is not executable" in answer.problem
    answer = lookup_command(str(tmp_path), env={}, cwd=None, config_folder=None)
    assert answer.problem is not None and "is a folder" in answer.problem
    answer = lookup_command("~/bin/x", env={}, cwd=None, config_folder=None, start_folder=tmp_path)
    assert answer.problem is not None and "'~' is not expanded" in answer.problem
