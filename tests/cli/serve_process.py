"""A real `nexus serve` for the tests in tests/cli: its stdout and stderr kept apart, in files."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from support.processes import VENV_BIN, child_env, free_port, stop_process, wait_for_http

TOKEN = "cli-serve-t0ken-51d9"


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    base: str  # http://127.0.0.1:PORT
    stdout: Path
    stderr: Path

    @property
    def mcp_url(self) -> str:
        return self.base + "/mcp"

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        return httpx2.request(method, self.base + path, json=body, headers=headers, timeout=30)

    def nexus(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`nexus ARGS` against this gateway, stdout a pipe."""
        return subprocess.run(
            [str(VENV_BIN / "nexus"), *args],
            capture_output=True,
            text=True,
            env=child_env(NEXUS_URL=self.base, NEXUS_TOKEN=TOKEN, COLUMNS="200"),
            timeout=60,
        )


@contextmanager
def serving(
    tmp: Path, servers: dict[str, Any], *args: str, builtins: bool = False, wait: bool = True
) -> Iterator[Served]:
    """`nexus serve -c CONFIG ARGS` on a free port; stopped (its whole process group) at the end."""
    port = free_port()
    document = {
        "gateway": {"include_builtins": builtins, "port": port, "token": TOKEN, "offload_threshold": None},
        "servers": servers,
    }
    config = tmp / "nexus.json"
    config.write_text(json.dumps(document))
    stdout, stderr = tmp / "serve.stdout", tmp / "serve.stderr"
    command = [str(VENV_BIN / "nexus"), "serve", "--no-watch", "-c", str(config), *args]
    env = child_env(NEXUS_DATA_DIR=str(tmp / "data"), NEXUS_CORTEX_DIR=str(tmp / "kb"), COLUMNS="200")
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}"
            if wait:
                wait_for_http(base + "/healthz", timeout=60, proc=proc)
            yield Served(proc, base, stdout, stderr)
        finally:
            stop_process(proc)
