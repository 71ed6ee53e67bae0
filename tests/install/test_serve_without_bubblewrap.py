"""`nexus serve` on a machine without bubblewrap (what `make run` may set up: it installs no
Debian package): it serves, says once how to get bubblewrap, and python_sandbox answers each
call with the same hint. A real process whose PATH holds no `bwrap`; the check itself is real."""

from __future__ import annotations

from pathlib import Path

import httpx2

from support.polling import eventually_sync
from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http

BANNER = "serving"
HINT = "sudo apt-get install bubblewrap"


def test_serve_without_bubblewrap_says_once_how_to_get_it(tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {name: value for name, value in child_env().items() if not name.startswith("NEXUS_")}
    env["PATH"] = str(empty_bin)  # the sandbox looks bwrap up on PATH: here there is none
    env["NEXUS_DATA_DIR"] = str(tmp_path / "data")
    port = free_port()
    log = tmp_path / "serve.log"
    args = [str(VENV_BIN / "nexus"), "serve", "--port", str(port), "--no-watch"]
    with running(args, env=env, log=log) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(base + "/api/servers", timeout=30, proc=proc)
        eventually_sync(lambda: BANNER in log.read_text(), 10, "the serve banner")

        for _ in range(2):  # every call says it; the banner said it once
            answer = httpx2.post(
                base + "/api/tools/python_sandbox/call", json={"arguments": {"code": "print(1)"}}, timeout=30
            )
            assert answer.status_code == 200, answer.text
            result = answer.json()
            assert result["isError"] is True
            text = result["content"][0]["text"]
            assert "bubblewrap (bwrap) is not installed" in text and HINT in text, text

        output = log.read_text()
        assert output.count("python_sandbox cannot run code") == 1, output
        assert output.count(HINT) == 1, output  # the calls' answers are not logged again
        assert "Traceback" not in output, output
