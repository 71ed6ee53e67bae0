"""Every `nexus` listing, piped: one line per row, names whole whatever COLUMNS says, `--json` the same data.

`nexus index ls | grep add_entity` once found nothing: rich wrapped `cortex.add_entit` / `y`
across two lines when stdout was not a terminal. These tests run the real command with stdout
a pipe and COLUMNS=20 against a real gateway.
"""

from __future__ import annotations

import io
import json
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import typer
from rich.console import Console

from frontends.cli_gateway import cli_gateway, nexus
from mcp_nexus.cli import interrupt as cli_interrupt
from mcp_nexus.cli.app import app
from mcp_nexus.cli.table import Column, Listing, escape_piped, print_listing


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with cli_gateway(tmp_path_factory.mktemp("cli-piped")) as base:
        # A task, so that `nexus task ls` has a row (without a model it fails at once: a row all the same).
        queued = nexus(base, "task", "run", "--no-wait", "record that fastapi uses starlette")
        assert queued.returncode == 0, queued.stderr
        yield base


Tables = list[tuple[str, list[dict[str, str]]]]


def tables(stdout: str) -> Tables:
    """Piped output as [(title, rows as {header: value})]: the title is the `# ` line before the header.

    Every line but a header or a row starts with `# `; a row whose field count differs from its
    header's is a row broken across lines, or a stray line: a failure.
    """
    found: Tables = []
    title, header = "", None
    for line in stdout.splitlines():
        if line.startswith("# "):
            title, header = line[2:], None
            continue
        fields = line.split("\t")
        if header is None:
            assert len(fields) > 1, f"a line neither a header nor a `# ` line: {line!r}"
            header = fields
            found.append((title, []))
            continue
        assert len(fields) == len(header), f"a row on more than one line, or a stray line: {line!r}"
        found[-1][1].append(dict(zip(header, fields, strict=True)))
    return found


def table(stdout: str, section: str = "") -> list[dict[str, str]]:
    """The rows of the table titled `section`, or of the first table."""
    found = tables(stdout)
    assert found, stdout
    if not section:
        return found[0][1]
    titled = [rows for title, rows in found if title == section]
    assert len(titled) == 1, (section, stdout)
    return titled[0]


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    section: str  # the table's title, or '' for the first table
    column: str  # the key column whose values --json must hold too
    from_json: Callable[[Any], set[str]]
    whole: str  # a long name that must come out whole and greppable


LISTINGS = {
    "tools": Case(("tools",), "", "tool", lambda d: {r["name"] for r in d}, "cortex.connect_entities"),
    "servers": Case(("servers",), "", "server", lambda d: {r["name"] for r in d["servers"]}, "cortex"),
    "stats": Case(("stats",), "tools", "tool", lambda d: set(d["tools"]), "cortex.get_entropy_report"),
    "cache stats": Case(("cache", "stats"), "", "tool", lambda d: set(d["tools"]), "f.pid"),
    "task ls": Case(("task", "ls"), "", "id", lambda d: {r["id"] for r in d}, ""),
    "index status": Case(
        ("index", "status"), "", "server", lambda d: {r["server_id"] for r in d["servers"]}, "cortex"
    ),
    "index ls": Case(("index", "ls"), "", "tool", lambda d: {r["name"] for r in d}, "cortex.add_entity"),
    "plugins": Case(("plugins",), "", "NAME", lambda d: {r["name"] for r in d}, ""),
}
# Variants of a listing: the same checks, other options.
VARIANTS = {
    "servers --history": Case(
        ("servers", "--history"), "servers", "server", LISTINGS["servers"].from_json, "cortex"
    )
}


@pytest.mark.parametrize("name", [*LISTINGS, *VARIANTS])
def test_piped_listing_is_one_line_per_row_and_json_has_the_same_names(base_url: str, name: str) -> None:
    case = {**LISTINGS, **VARIANTS}[name]
    piped = nexus(base_url, *case.args, COLUMNS="20")
    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stdout and "│" not in piped.stdout, piped.stdout
    rows = table(piped.stdout, case.section)
    assert rows, piped.stdout
    names = {row[case.column] for row in rows}
    if case.whole:
        assert case.whole in names, piped.stdout
        grepped = [line for line in piped.stdout.splitlines() if case.whole in line]
        assert grepped and all(line.split("\t")[0] == case.whole for line in grepped if "\t" in line)

    as_json = nexus(base_url, *case.args, "--json", COLUMNS="20")
    assert as_json.returncode == 0, as_json.stderr
    assert case.from_json(json.loads(as_json.stdout)) == names


def test_a_broken_servers_error_stays_on_its_line(base_url: str) -> None:
    """The server's command holds ESC and a newline: its error row stays one line, nothing raw."""
    piped = nexus(base_url, "servers", COLUMNS="20")
    assert "\x1b" not in piped.stdout
    broken = [row for row in table(piped.stdout) if row["server"] == "broken"]
    assert len(broken) == 1 and broken[0]["state"] in ("ERROR", "CRASHED"), piped.stdout
    assert "red" in broken[0]["error"] and "second line" in broken[0]["error"], broken
    as_json = json.loads(nexus(base_url, "servers", "--json").stdout)
    errors = [row["last_error"] for row in as_json["servers"] if row["name"] == "broken"]
    assert [escape_piped(error) for error in errors] == [broken[0]["error"]]  # a pipe doubles a backslash


def test_the_help_of_a_listing_says_how_it_prints_in_a_pipe(base_url: str) -> None:
    shown = nexus(base_url, "index", "ls", "--help", COLUMNS="200")
    assert "header line" in shown.stdout and "tab-separated" in shown.stdout and "--json" in shown.stdout


# -- every command: a listing has --json, and a case above ---------------------------------------

# Commands that print no table: a result as JSON, a message, or a server that runs.
NOT_LISTINGS = {
    "version",
    "serve",
    "call",
    "start",
    "stop",
    "restart",
    "reload",
    "config check",
    "import",
    "tools pending",  # a report (what changed, what the scan found), --json too
    "tools diff",
    "tools approve",
    "cortex add",
    "cortex observe",
    "cortex connect",
    "cortex search",
    "cortex report",
    "cortex show",
    "cortex import",
    "cortex serve",
    "device serve",
    "device info",
    "cache clear",
    "auth login",
    "auth logout",
    "auth status",  # a listing with --json, tested piped in tests/oauth/ (it needs an OAuth server)
    "bridge xiaozhi",
    "task run",
    "task show",
    "task cancel",
    "index show",
    "index sync",
    "index export",
    "index import",
    "audit verify",
    "audit tail",  # a listing with --json of the log's files, not of a gateway: tests/audit/
    "audit export",
}


def _commands(group: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    context = typer.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)  # a lazily loaded group is loaded here
        if hasattr(command, "commands"):
            if getattr(command, "invoke_without_command", False):
                yield f"{prefix}{name}", command  # `nexus tools` runs by itself, beside its subcommands
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def test_every_command_is_known_and_every_listing_takes_json() -> None:
    """A new command must be sorted here: a listing gets --json and a case in LISTINGS."""
    commands = dict(_commands(typer.main.get_command(app)))
    unknown = set(commands) - set(LISTINGS) - NOT_LISTINGS
    assert not unknown, f"new commands {sorted(unknown)}: add each to LISTINGS (with --json) or NOT_LISTINGS"
    assert not (set(LISTINGS) | NOT_LISTINGS) - set(commands), "a command listed here is gone"
    for name in LISTINGS:
        options = {opt for param in commands[name].params for opt in getattr(param, "opts", [])}
        assert "--json" in options, f"`nexus {name}` is a listing without --json"


# -- the printer itself -------------------------------------------------------------------------


def _printed(listing: Listing, *, terminal: bool, width: int = 20) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=terminal, color_system=None, width=width)
    print_listing(listing, console)
    return buffer.getvalue()


def test_control_characters_print_as_escapes_in_a_pipe_and_on_a_terminal() -> None:
    listing = Listing((Column("tool", key=True), Column("description")), "tools")
    listing.add("evil\x1b]0;owned\x07.tool", "two\nlines\tand a tab, a \\ and \u202eevil")
    listing.add("cortex.add_entity", "fine")
    piped = _printed(listing, terminal=False)
    assert piped.splitlines() == [
        "tool\tdescription",
        "evil\\x1b]0;owned\\x07.tool\ttwo\\nlines\\tand a tab, a \\\\ and \\u202eevil",
        "cortex.add_entity\tfine",
    ]
    shown = _printed(listing, terminal=True)
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "evil\\x1b]0;owned\\x07.tool" in shown and "cortex.add_entity" in shown  # whole, on one line


def test_on_a_narrow_terminal_names_stay_whole_and_the_rest_gives_way() -> None:
    listing = Listing(
        (Column("tool", key=True), Column("server", key=True), Column("description", one_line=True)), "t"
    )
    listing.add("cortex.add_entity", "cortex", "Record a new entity. Fails with [entity_exists] if taken.")
    for width in (20, 40, 200):
        lines = _printed(listing, terminal=True, width=width).splitlines()
        row = [line for line in lines if "cortex.add_entity" in line]
        assert len(row) == 1 and "cortex " in row[0], lines
        assert "[entity_exists]" in _printed(listing, terminal=True, width=200)  # text, not markup


def test_the_cli_module_keeps_ctrl_c_to_itself_when_imported() -> None:
    """Imported by a test (not run as `nexus`), the CLI leaves the process's SIGINT handler alone."""
    assert not cli_interrupt.IS_PROGRAM
    assert signal.getsignal(signal.SIGINT) is not cli_interrupt._end_now
