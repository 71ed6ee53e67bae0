"""`nexus --help` and `nexus version` start fast: they import typer and little else.

They once took 2-2.8 s, most of it importing the Xiaozhi bridge and the `mcp` package at the top
of cli/app.py. The import check below is the deterministic guard (PYTHONPROFILEIMPORTTIME lists every
module the real `nexus` process imports); the wall-time bound is a generous backstop for a
loaded machine (the target on an idle one is under 0.3 s).
"""

from __future__ import annotations

import re
import subprocess
import time
from importlib.metadata import version as installed_version

import pytest
import typer
from typer.testing import CliRunner

from mcp_nexus.cli import lazy_coercion as cli_lazy_coercion
from mcp_nexus.cli.app import NexusGroup, app
from support.processes import VENV_BIN, child_env

FAST_COMMANDS = [["--help"], ["-h"], ["version"], ["--version"]]
# What a command that answers at once must not import: the gateway and its protocol stack, the
# web stack, the Xiaozhi bridge, and the libraries only a real command needs.
HEAVY = (
    "mcp",
    "mcp_types",
    "mcp_nexus.frontends",
    "mcp_nexus.gateway",
    "mcp_nexus.runtime",
    "mcp_nexus.config",
    "starlette",
    "uvicorn",
    "pydantic",
    "httpx2",
    "rich",
    "asyncio",
)
WALL_BOUND = 1.0  # seconds, best of three: generous for a loaded machine


def nexus(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args], capture_output=True, text=True, env=child_env(**env), timeout=30
    )


def imported_modules(args: list[str]) -> set[str]:
    done = nexus(*args, PYTHONPROFILEIMPORTTIME="1")
    assert done.returncode == 0, done.stderr[-2000:]
    modules = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert "typer" in modules, done.stderr[-2000:]  # the listing is there: the check can fail
    return modules


@pytest.mark.parametrize("args", FAST_COMMANDS, ids=" ".join)
def test_a_fast_command_imports_no_heavy_module(args: list[str]) -> None:
    modules = imported_modules(args)
    heavy = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert not heavy, f"`nexus {' '.join(args)}` imports {heavy}"


@pytest.mark.parametrize("args", FAST_COMMANDS, ids=" ".join)
def test_a_fast_command_starts_within_the_bound(args: list[str]) -> None:
    best = float("inf")
    for _ in range(3):
        began = time.monotonic()
        done = nexus(*args)
        best = min(best, time.monotonic() - began)
        assert done.returncode == 0, done.stderr
    assert best < WALL_BOUND, f"`nexus {' '.join(args)}` took {best:.2f} s at best"


def test_version_and_dash_dash_version_print_the_installed_version() -> None:
    assert nexus("version").stdout.strip() == installed_version("mcp-nexus")
    assert nexus("--version").stdout.strip() == installed_version("mcp-nexus")


def test_the_root_help_lists_every_group_with_its_own_summary() -> None:
    """The root help names a lazy group with a summary written in cli/app.py: it must be the group's own."""
    shown = CliRunner().invoke(app, ["--help"])
    assert shown.exit_code == 0, shown.output
    for name, spec in NexusGroup.LAZY.items():
        loaded = spec.load(name)
        assert spec.summary == loaded.help.strip().splitlines()[0], name
        assert re.search(rf"^  {name}\s+{re.escape(spec.summary[:30])}", shown.output, re.MULTILINE), name


def _command_paths(group: typer.core.TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    context = typer.Context(group)
    found: list[tuple[str, ...]] = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        found.append((*prefix, name))
        if isinstance(command, typer.core.TyperGroup):
            found += _command_paths(command, (*prefix, name))
    return found


def test_every_command_takes_dash_h_and_shows_flags_without_a_value() -> None:
    """-h works everywhere (lazy groups too), and a boolean option is a bare flag: `--json`, not `--json <bool>`."""
    paths = _command_paths(typer.main.get_command(app))  # type: ignore[arg-type]
    assert ("cortex", "add") in paths and ("index", "ls") in paths and ("serve",) in paths
    runner = CliRunner()
    for path in paths:
        shown = runner.invoke(app, [*path, "-h"])
        assert shown.exit_code == 0 and "Usage:" in shown.output, (path, shown.output)
        assert "<bool>" not in shown.output and "BOOLEAN" not in shown.output, (path, shown.output)
        assert "\x1b" not in shown.output and "╭" not in shown.output, (path, shown.output)  # plain help


def test_a_flag_takes_no_value() -> None:
    given = nexus("tools", "--json", "true", "--url", "http://127.0.0.1:9")
    assert given.returncode == 2 and "Traceback" not in given.stderr
    assert "unexpected extra argument" in given.stderr and "true" in given.stderr


def test_a_mistyped_command_gets_a_suggestion_among_lazy_groups_too() -> None:
    done = nexus("indx")
    assert done.returncode == 2 and "Did you mean 'index'?" in done.stderr, done.stderr


def test_missing_values_stay_cheap_and_given_values_are_still_checked() -> None:
    """The shim keeps pydantic out of an option left out; a given value is converted as before."""
    cli_lazy_coercion.install()
    cli_lazy_coercion.install()  # twice is once
    runner = CliRunner()
    bad = runner.invoke(app, ["task", "ls", "--limit", "abc"])
    assert bad.exit_code == 2 and "--limit" in bad.output, bad.output
    bad = runner.invoke(app, ["task", "ls", "--limit", "0"])
    assert bad.exit_code == 2 and "--limit" in bad.output, bad.output
