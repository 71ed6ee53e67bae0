"""A real `nexus serve` for the CLI's piped-output and Ctrl-C tests, and a way to run `nexus` against it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2

from lifecycle.faults import faulty
from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http

TOKEN = "cli-t0ken-8c2e"
# A server that cannot start, its command holding an escape sequence and a newline: its error
# reaches `nexus servers` as the gateway reports it, and must print escaped, on one line.
BROKEN_COMMAND = "/nonexistent/\x1b[31mred\nsecond line"


@contextmanager
def cli_gateway(tmp: Path) -> Iterator[str]:
    """The gateway's base URL: the built-in servers, a fault-injection server with a cached tool, a
    broken server, the control plane; one call of each kind made, so every listing has rows."""
    port = free_port()
    document = {
        "gateway": {"include_builtins": True, "port": port, "token": TOKEN, "offload_threshold": None},
        "servers": {
            "f": faulty("f", tool_config={"pid": {"cache_ttl": 60}}),
            "broken": {"command": BROKEN_COMMAND, "restart": {"max_attempts": 0}},
        },
        "control": {"enabled": True, "queue_path": str(tmp / "tasks.sqlite"), "retry_backoff": 0.01},
    }
    config = tmp / "nexus.json"
    config.write_text(json.dumps(document))
    args = [str(VENV_BIN / "nexus"), "serve", "--wait-ready", "--no-watch", "-c", str(config)]
    env = child_env(NEXUS_DATA_DIR=str(tmp / "data"), NEXUS_CORTEX_DIR=str(tmp / "kb"))
    with running(args, env=env, log=tmp / "gateway.log") as proc:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(base + "/healthz", timeout=60, proc=proc)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        for tool in ("f.pid", "f.pid", "cortex.get_entropy_report"):
            answer = httpx2.post(
                f"{base}/api/tools/{tool}/call", json={"arguments": {}}, headers=headers, timeout=60
            )
            assert answer.status_code == 200, answer.text
        yield base


def nexus(base: str, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """`nexus ARGS` with stdout a pipe, against the gateway at `base`."""
    return subprocess.run(
        [str(VENV_BIN / "nexus"), *args],
        capture_output=True,
        text=True,
        env=child_env(NEXUS_URL=base, NEXUS_TOKEN=TOKEN, **env),
        timeout=timeout,
    )
