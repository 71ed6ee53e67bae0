"""What `nexus serve` prints: the banner, then log lines in one format, on stderr; `--quiet` keeps
only warnings and errors.

The `  server X: READY` echoes once came between log lines in another shape (no time, no level),
and there was no way to keep only the problems.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from cli.serve_process import Served, serving
from lifecycle.faults import faulty

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")
BANNER_FIRST = re.compile(r"^Nexus \S+ serving \d+ tools from \d+/\d+ servers at http://")
BANNER_LAST = "Or try it with the Inspector:"
BROKEN = {"command": "/nonexistent/nexus-test-server", "restart": {"max_attempts": 0}}


def stderr_when(served: Served, done: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while done not in (text := served.stderr.read_text()):
        assert time.monotonic() < deadline, f"no {done!r} on stderr: {text[-3000:]}"
        time.sleep(0.1)
    return text


def outside_the_banner(text: str) -> list[str]:
    """stderr's lines without the banner block (from its first line to its last)."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if BANNER_FIRST.match(line)), None)
    if first is None:
        return lines
    last = next(i for i in range(first, len(lines)) if lines[i].startswith(BANNER_LAST))
    return lines[:first] + lines[last + 1 :]


def test_every_line_but_the_banner_is_a_log_record_and_stdout_stays_empty(tmp_path: Path) -> None:
    with serving(tmp_path, {"f": faulty("f"), "broken": BROKEN}) as served:
        text = stderr_when(served, "server broken: ERROR")
        text = stderr_when(served, "server f: READY, ")
    assert any(BANNER_FIRST.match(line) for line in text.splitlines()), text  # the banner is there
    others = [line for line in outside_the_banner(text) if line.strip()]
    stray = [line for line in others if not LOG_LINE.match(line)]
    assert not stray, f"lines in another shape among the logs: {stray}"
    ready = [line for line in others if "server f: READY, " in line]
    assert ready and all(" INFO mcp_nexus.serve: " in line for line in ready), ready
    failed = [line for line in others if "server broken: ERROR" in line]
    assert failed and all(" WARNING mcp_nexus.serve: " in line for line in failed), failed
    assert served.stdout.read_text() == ""


def test_quiet_keeps_only_warnings_and_errors(tmp_path: Path) -> None:
    with serving(tmp_path, {"f": faulty("f"), "broken": BROKEN}, "--quiet", "--wait-ready") as served:
        text = stderr_when(served, "server broken: ERROR")
        listed = served.nexus("servers", "--json")
        assert listed.returncode == 0 and '"READY"' in listed.stdout, listed.stderr  # f is up all the same
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, text
    shown = [line for line in lines if LOG_LINE.match(line)]
    assert shown == lines, f"not a log record: {set(lines) - set(shown)}"  # no banner either
    assert all(re.search(r" (WARNING|ERROR|CRITICAL) ", line) for line in lines), lines
    assert not any("READY" in line for line in lines), lines
