"""Start and always clean up the real processes tests need."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx2

from support.polling import eventually_sync
from support.ports import free_port as free_port  # re-exported: most tests take their ports from here

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
NODE_BIN = ROOT / "tools" / "node" / "node_modules" / ".bin"
V1_BIN = ROOT / ".venv-v1" / "bin"
TESTS = ROOT / "tests"


def require(path: Path) -> str:
    """A missing test peer is a failure with the install step named, never a skip."""
    if not path.exists():
        raise AssertionError(f"{path} is missing: run `make test` (scripts/setup.sh installs it)")
    return str(path)


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def _still_running(proc: subprocess.Popen[bytes] | None, waiting_for: str) -> None:
    if proc is not None and proc.poll() is not None:
        raise AssertionError(f"process exited with {proc.returncode} before {waiting_for}")


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_for_port(port: int, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    def listening() -> bool:
        _still_running(proc, f"listening on {port}")
        return port_open(port)

    eventually_sync(listening, timeout, f"something listening on 127.0.0.1:{port}")


def wait_for_http(url: str, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    def answers() -> bool:
        _still_running(proc, f"answering {url}")
        try:
            return httpx2.get(url, timeout=1).status_code < 500
        except httpx2.HTTPError:
            return False

    eventually_sync(answers, timeout, f"{url} to answer", interval=0.1)


def stop_process(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM the whole process group, then SIGKILL it: no child may outlive a test."""
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=grace)


@contextmanager
def running(
    args: list[str], *, env: dict[str, str] | None = None, log: Path | None = None, cwd: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        args, env=env or child_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd
    )
    try:
        yield proc
    finally:
        stop_process(proc)
        if log:
            out.close()  # type: ignore[union-attr]
