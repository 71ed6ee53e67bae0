"""A mistyped config key gets "did you mean", also the key that names a server's transport.

`{"comand": "calc-server"}` once said "cannot tell the transport: give 'command', 'url' or
'type'", true but not what went wrong. Run through the real `nexus` (exit 2, no traceback).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.processes import VENV_BIN, child_env

CASES = {
    "gateway key": ({"gateway": {"prot": 8000}}, "gateway.prot: unknown field; did you mean 'port'?"),
    "misspelt command": (
        {"servers": {"calc": {"comand": "calc-server"}}},
        "servers.calc.comand: unknown field; did you mean 'command'?",
    ),
    "misspelt url": (
        {"servers": {"remote": {"ulr": "http://127.0.0.1:9/mcp"}}},
        "servers.remote.ulr: unknown field; did you mean 'url'?",
    ),
    "misspelt args": (
        {"servers": {"calc": {"command": "calc-server", "argz": []}}},
        "servers.calc.argz: unknown field; did you mean 'args'?",
    ),
    "nothing close": (
        {"servers": {"calc": {"zzzz": 1}}},
        "servers.calc: cannot tell the transport: give 'command', 'url' or 'type'",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_mistyped_key_is_named_with_the_closest_one(tmp_path: Path, case: str) -> None:
    document, expected = CASES[case]
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(document))
    done = subprocess.run(
        [str(VENV_BIN / "nexus"), "servers", "-c", str(path)],
        capture_output=True,
        text=True,
        env=child_env(COLUMNS="200"),
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert expected in done.stderr, done.stderr
