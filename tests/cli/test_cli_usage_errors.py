"""A bad command line gets a usage error naming the option, never a traceback.

`nexus serve --port 99999` once printed ~60 lines of traceback ending in OverflowError. Each
case runs the real `nexus` and needs no gateway: the mistake is caught before anything starts.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.processes import VENV_BIN, child_env

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a case that got past its checks fails with exit 1
MISSING = "/nonexistent/nexus-config.json"

# (arguments, exit status, what the message must say)
CASES: list[tuple[list[str], int, list[str]]] = [
    (["serve", "--port", "99999"], 2, ["'--port'", "0-65535"]),
    (["serve", "--port", "-1"], 2, ["'--port'", "0-65535"]),
    (["serve", "--port", "http"], 2, ["'--port'"]),
    (["serve", "--host", "bad host"], 2, ["'--host'", "neither an IP address nor a host name"]),
    (["serve", "--host", "999.1.1.1"], 2, ["'--host'"]),
    (["serve", "--verbose", "--quiet"], 2, ["--quiet"]),
    (["serve", "-c", MISSING], 2, [MISSING, "cannot read"]),
    (["tools", "-c", MISSING], 2, [MISSING]),
    (["servers", "-c", MISSING], 2, [MISSING]),
    (["call", "x.y", "--arg", "novalue", "--url", NOWHERE], 2, ["--arg expects key=value"]),
    (["call", "x.y", "--json", "{oops", "--url", NOWHERE], 2, ["--json is not valid JSON"]),
    (["stats", "--watch", "0", "--url", NOWHERE], 2, ["'--watch'"]),
    (["stats", "--watch", "-2", "--url", NOWHERE], 2, ["'--watch'"]),
    (["task", "ls", "--limit", "-5", "--url", NOWHERE], 2, ["'--limit'"]),
    (["task", "run", "a goal", "--timeout", "-1", "--url", NOWHERE], 2, ["'--timeout'"]),
    (["index", "ls", "--limit", "0", "--url", NOWHERE], 2, ["'--limit'"]),
    (["index", "import", MISSING, "--url", NOWHERE], 2, [MISSING]),
    (["bridge", "xiaozhi", "--status-every", "-1"], 2, ["'--status-every'"]),
    (["bridge", "xiaozhi", "--envelope-port", "70000"], 2, ["'--envelope-port'", "0-65535"]),
    (["start"], 2, ["Missing argument"]),
    (["nosuch"], 2, ["No such command 'nosuch'"]),
    (["tools", "--nosuch"], 2, ["No such option: --nosuch"]),
]


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args],
        capture_output=True,
        text=True,
        env=child_env(COLUMNS="200", NEXUS_CONFIG=""),
        timeout=60,
    )


@pytest.mark.parametrize(("args", "status", "says"), CASES, ids=[" ".join(args) for args, _, _ in CASES])
def test_a_bad_invocation_is_a_usage_error_without_a_traceback(
    args: list[str], status: int, says: list[str]
) -> None:
    done = run(args)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == status, output
    missing = [text for text in says if text not in output]
    assert not missing, f"lacks {missing}: {output}"


def test_an_unwritable_export_target_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    store = tmp_path / "index.sqlite3"
    document = tmp_path / "index.json"
    document.write_text(json.dumps({"version": "1.0.0", "servers": []}))
    saved = run(["index", "import", str(document), "--store", str(store)])
    assert saved.returncode == 0, saved.stderr
    target = tmp_path / "no" / "such" / "folder" / "out.json"
    done = run(["index", "export", str(target), "--store", str(store)])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot write {target}" in done.stderr
