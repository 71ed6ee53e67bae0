"""Start the conformance fixture server as a child process for a test, and always stop it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

FIXTURE_SERVER = Path(__file__).resolve().with_name("fixture_server.py")


@dataclass(frozen=True)
class RunningFixture:
    """A fixture server listening on 127.0.0.1."""

    port: int
    pid: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def free_port() -> int:
    """A port the kernel just handed out; free again once the probe socket closes."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def stdio_command() -> list[str]:
    """The command line that serves the fixture over stdio (for stdio upstream configs)."""
    return [sys.executable, str(FIXTURE_SERVER), "--stdio"]


def _wait_until_listening(process: subprocess.Popen[bytes], port: int, log: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"fixture server exited with {process.returncode} before listening on {port}:\n"
                f"{log.read_text(errors='replace')[-2000:]}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"fixture server did not listen on 127.0.0.1:{port} within the startup timeout")


@contextmanager
def running_fixture_server(log_dir: Path, startup_timeout_s: float = 20.0) -> Iterator[RunningFixture]:
    """Run `fixture_server.py --port N` on a free port; stop it (and its group) on exit.

    The server's stderr goes to `log_dir/fixture_server.log`, quoted in startup errors.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "fixture_server.log"
    port = free_port()
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, str(FIXTURE_SERVER), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_listening(process, port, log, time.monotonic() + startup_timeout_s)
        yield RunningFixture(port=port, pid=process.pid)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
