"""`nexus serve` as a real process on a free port, with helpers to talk to its admin API."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from support.polling import eventually_sync
from support.processes import VENV_BIN, child_env, running, wait_for_http
from support.served_port import serving_port

_serial = itertools.count(1)  # log names: one test may serve several gateways in one folder


@dataclass
class ServedGateway:
    base: str
    token: str | None
    log: Path
    proc: subprocess.Popen[bytes] | None = None  # when the test may kill it (tests/scale/test_scale_tasks.py)

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def get(self, path: str) -> httpx2.Response:
        return httpx2.get(self.base + path, headers=self._headers(), timeout=30)

    def post(self, path: str, body: dict[str, Any] | None = None) -> httpx2.Response:
        return httpx2.post(self.base + path, json=body or {}, headers=self._headers(), timeout=60)

    def servers(self) -> dict[str, dict[str, Any]]:
        answer = self.get("/api/servers")
        assert answer.status_code == 200, answer.text
        return {row["name"]: row for row in answer.json()["servers"]}

    def tool_names(self) -> set[str]:
        answer = self.get("/api/tools")
        assert answer.status_code == 200, answer.text
        return {row["name"] for row in answer.json()["tools"]}

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> httpx2.Response:
        return self.post(f"/api/tools/{tool}/call", {"arguments": arguments or {}})

    def wait_for(self, what: str, check: Callable[[], bool], timeout: float = 30.0) -> None:
        eventually_sync(
            check, timeout, what, interval=0.1, detail=lambda: f"log:\n{self.log.read_text()[-4000:]}"
        )

    def wait_state(self, server: str, state: str, timeout: float = 30.0) -> dict[str, Any]:
        self.wait_for(f"{server} to be {state}", lambda: self.servers()[server]["state"] == state, timeout)
        return self.servers()[server]


def gateway_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A clean environment: data under tmp_path, the venv's `python` first on PATH, no NEXUS_* from outside."""
    env = {k: v for k, v in child_env().items() if not k.startswith("NEXUS_")}
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    env["NEXUS_DATA_DIR"] = str(tmp_path / "data")
    env["NEXUS_CORTEX_DIR"] = str(tmp_path / "kb")
    env.update(extra)
    return env


@contextmanager
def served(
    config: Path, tmp_path: Path, *, token: str | None = None, env: dict[str, str] | None = None
) -> Iterator[ServedGateway]:
    # Port 0: the gateway binds a port itself and holds it (support/served_port.py).
    log = tmp_path / f"gateway-{next(_serial)}.log"
    args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", "0", "--no-watch"]
    with running(args, env=env or gateway_env(tmp_path), log=log) as proc:
        base = f"http://127.0.0.1:{serving_port(log, proc)}"
        wait_for_http(base + "/api/servers", timeout=60, proc=proc)
        yield ServedGateway(base, token, log)
