"""Start the conformance fixture server as a child process for a test, and always stop it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.polling import eventually_sync
from support.ports import free_port
from support.processes import port_open

FIXTURE_SERVER = Path(__file__).resolve().with_name("fixture_server.py")


@dataclass(frozen=True)
class RunningFixture:
    """A fixture server listening on 127.0.0.1."""

    port: int
    pid: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def stdio_command() -> list[str]:
    """The command line that serves the fixture over stdio (for stdio upstream configs)."""
    return [sys.executable, str(FIXTURE_SERVER), "--stdio"]


def _wait_until_listening(process: subprocess.Popen[bytes], port: int, log: Path, timeout: float) -> None:
    def listening() -> bool:
        if process.poll() is not None:
            raise RuntimeError(
                f"fixture server exited with {process.returncode} before listening on {port}:\n"
                f"{log.read_text(errors='replace')[-2000:]}"
            )
        return port_open(port)

    eventually_sync(listening, timeout, f"the fixture server to listen on 127.0.0.1:{port}")


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
        _wait_until_listening(process, port, log, startup_timeout_s)
        yield RunningFixture(port=port, pid=process.pid)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
