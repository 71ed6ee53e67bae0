"""Gateway processes for the robustness tests: a config in front of the echo upstream, run black-box.

Only the command line, the config file and the wire are used, so these tests survive any
restructuring of the code behind them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from support.processes import TESTS, VENV_BIN, child_env, free_port, stop_process, wait_for_http

ECHO_TOOL = "echo.echo"  # answers with the canonical JSON of its arguments (support/echo_upstream.py)
SURROGATE_TOOL = "echo.lone_surrogate"  # answers with a text holding a lone surrogate


def echo_upstream() -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "support.echo_upstream"],
        "env": {"PYTHONPATH": str(TESTS)},
        # Governance off for this server: thousands of calls a second are the point here, and
        # every answer must be the upstream's own (no cache, no offloaded preview, no retry).
        "rate_limit": None,
        "cache_ttl": 0,
        "offload_threshold": None,
        "retries": 0,
    }


def write_config(
    folder: Path,
    *,
    gateway: dict[str, Any] | None = None,
    xiaozhi: dict[str, Any] | None = None,
    name: str = "nexus.json",
) -> Path:
    """A config with the echo upstream as server `echo`, no built-ins, everything under `folder`."""
    document: dict[str, Any] = {
        "gateway": {
            "include_builtins": False,
            "offload_dir": str(folder / "offload"),
            "shutdown_grace": 1,  # tests stop gateways often; calls in flight are not the point here
            **(gateway or {}),
        },
        "servers": {"echo": echo_upstream()},
    }
    if xiaozhi is not None:
        document["xiaozhi"] = xiaozhi
    path = folder / name
    path.write_text(json.dumps(document, indent=2))
    return path


def rss_bytes(pid: int) -> int:
    """Resident memory of one process (psutil: portable, no /proc parsing here)."""
    return int(psutil.Process(pid).memory_info().rss)


class HttpGateway:
    """`nexus serve --port P` on 127.0.0.1, its output in a log file."""

    def __init__(
        self, config: Path, log: Path, port: int | None = None, command: list[str] | None = None
    ) -> None:
        self.port = port or free_port()
        self.config = config
        self.log = log
        self._log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                *(command or [str(VENV_BIN / "nexus")]),
                "serve",
                "--port",
                str(self.port),
                "--no-watch",
                "--config",
                str(config),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=child_env(),
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60.0) -> HttpGateway:
        try:
            wait_for_http(f"{self.base}/healthz", timeout=timeout, proc=self.proc)  # type: ignore[arg-type]
        except AssertionError as exc:
            raise AssertionError(f"{exc}; log ends with:\n{self.log_tail()}") from None
        return self

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 8) -> str:
        self._log.flush()
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        kept = [
            line for line in text.splitlines() if line.strip() and not set(line.strip()) <= set("│╭╮╰╯─ ")
        ]
        return "\n".join(kept[-lines:])

    def stop(self) -> None:
        stop_process(self.proc)  # type: ignore[arg-type]
        self._log.close()
