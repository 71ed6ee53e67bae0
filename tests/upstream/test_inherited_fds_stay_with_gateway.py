"""A descriptor the gateway inherited without close-on-exec does not reach its stdio servers.

uvloop's spawn keeps every inheritable descriptor open in the child (it has no `close_fds`), so
a pipe that whoever started `nexus serve` left open (here: `pass_fds`, as a shell's `3>file`
or a leaking desktop client would) reached every server it spawned. The gateway now makes
what it inherited close-on-exec at start (src/mcp_nexus/inherited_fds.py), without closing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.processes import VENV_BIN, child_env, free_port, stop_process

HERE = Path(__file__).resolve().parent
SERVER = HERE / "fd_reporting_server.py"


def _targets_of(pid: int) -> set[str]:
    targets = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            targets.add(os.readlink(fd))
        except OSError:
            continue
    return targets


def _wait_for(path: Path, proc: subprocess.Popen[bytes], log: Path, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(
        f"the server never reported its descriptors; gateway log:\n{log.read_text()[-2000:]}"
    )


@pytest.mark.parametrize("frontend", ["stdio", "http"])
def test_a_descriptor_the_gateway_inherited_is_open_in_it_but_not_in_its_server(
    tmp_path: Path, frontend: str
) -> None:
    report = tmp_path / "fds.txt"
    config = tmp_path / "nexus.json"
    config.write_text(
        json.dumps(
            {
                "gateway": {"include_builtins": False, "offload_dir": str(tmp_path / "offload")},
                "servers": {"reporter": {"command": sys.executable, "args": [str(SERVER), str(report)]}},
            }
        )
    )
    read_end, write_end = os.pipe()  # what the gateway's parent leaks to it
    leaked = f"pipe:[{os.fstat(write_end).st_ino}]"
    args = [str(VENV_BIN / "nexus"), "serve", "--no-watch", "--config", str(config)]
    args += ["--stdio"] if frontend == "stdio" else ["--port", str(free_port())]
    log = tmp_path / "gateway.log"
    with open(log, "wb") as out:
        gateway = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE if frontend == "stdio" else out,
            stderr=out,
            env=child_env(),
            start_new_session=True,
            pass_fds=[write_end],
        )
    os.close(write_end)
    try:
        seen_by_server = _wait_for(report, gateway, log)
        assert gateway.poll() is None, log.read_text()[-2000:]
        # Still the gateway's (it may use what it inherited), but not the server's.
        assert leaked in _targets_of(gateway.pid)
        assert leaked not in seen_by_server, (
            f"the server holds the gateway's inherited pipe:\n{seen_by_server}"
        )
    finally:
        stop_process(gateway)
        if gateway.stdin is not None:
            gateway.stdin.close()
        if gateway.stdout is not None:
            gateway.stdout.close()
        os.close(read_end)
