"""Finding (and, after a failed test, killing) the processes of the no-orphan tests.

Every stdio server these tests start is `stubborn_server.py` (ignores SIGTERM and stdin
end-of-file), directly or behind `orphan_launcher.sh`, with `--nexus-orphan-marker=<id>` on
its command line: whatever survives is found by scanning /proc/*/cmdline for that id, no
matter who its parent is now. Zombies (dead, waiting to be collected) have an empty
cmdline there and do not count.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from support.polling import eventually_sync
from support.processes import TESTS, VENV_BIN, child_env, free_port, stop_process

STUBBORN = TESTS / "support" / "stubborn_server.py"
LAUNCHER = TESTS / "support" / "orphan_launcher.sh"
MARKER_FLAG = "--nexus-orphan-marker="
WATCHDOG_SCRIPT = "orphan_watchdog.py"
STOP_S = 0.5  # each stubborn server's timeouts.stop: SIGTERM after 0.2 s, SIGKILL after 0.5 s
TOKEN = "orphans-token"


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def stubborn(
    marker: str, *, initialize_after: str | float = 0, launcher: bool = False, **fields: Any
) -> dict[str, Any]:
    """A config entry for a stubborn server; `launcher` puts `sh orphan_launcher.sh` in front."""
    argv = [str(STUBBORN), f"{MARKER_FLAG}{marker}", "--initialize-after", str(initialize_after)]
    entry: dict[str, Any] = {
        "command": "sh" if launcher else sys.executable,
        "args": [str(LAUNCHER), sys.executable, *argv] if launcher else argv,
        "timeouts": {"stop": STOP_S},
        "health": {"interval": 0},
        "auto_restart": False,  # a stop must not be followed by a fresh process with the same marker
        "rate_limit": None,
    }
    entry.update(fields)
    return entry


def _cmdlines() -> Iterator[tuple[int, list[bytes]]]:
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                    raw = cmdline.read()
            except OSError:
                continue
            if raw:
                yield int(entry.name), raw.rstrip(b"\0").split(b"\0")


def marked(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (launchers, servers, wrappers)."""
    needle = marker.encode()
    return [pid for pid, argv in _cmdlines() if any(needle in arg for arg in argv)]


def marked_servers(marker: str) -> list[int]:
    """Live stubborn server processes themselves (not the launcher or a wrapper before exec)."""
    needle = marker.encode()
    return [
        pid
        for pid, argv in _cmdlines()
        if len(argv) > 1 and argv[1].endswith(b"stubborn_server.py") and any(needle in a for a in argv)
    ]


def ignores_sigterm(pid: int) -> bool:
    """Whether `pid` has set SIGTERM to be ignored (its `SigIgn` mask in /proc): a stubborn server
    is stubborn only from then on, a moment after its command line is already visible."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def watchdogs_of(gateway_pid: int) -> list[int]:
    """The orphan watchdog(s) started by `gateway_pid`, while they run."""
    return [
        pid
        for pid, argv in _cmdlines()
        if len(argv) >= 2
        and argv[-2].endswith(WATCHDOG_SCRIPT.encode())
        and argv[-1] == str(gateway_pid).encode()
    ]


def describe(pids: list[int]) -> str:
    lines = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        lines.append(f"pid {pid} (parent {ppid}): {argv.strip()[:200]}")
    return "; ".join(lines) or "none"


def wait_until(predicate: Any, timeout: float, poll: float = 0.05) -> bool:
    """Whether `predicate()` holds within `timeout` s: `eventually_sync` for tests that assert themselves."""
    try:
        eventually_sync(predicate, timeout, interval=poll)
    except AssertionError:
        return False
    return True


def survivors(marker: str, within: float) -> list[int]:
    """Wait up to `within` s for every process marked `marker` to be gone; return those that are not."""
    wait_until(lambda: not marked(marker), within)
    return marked(marker)


def kill_marked(marker: str) -> None:
    """Cleanup after a failed test: SIGKILL every marked process and its process group."""
    for pid in marked(marker):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Serve:
    """One `nexus serve` subprocess, in a session of its own, logging to a file."""

    proc: subprocess.Popen[bytes]
    port: int
    config: Path
    log: Path
    run_id: str
    started: float = field(default_factory=time.monotonic)

    def api(self, method: str, path: str, body: Any = None, timeout: float = 60) -> httpx2.Response:
        return httpx2.request(
            method,
            f"http://127.0.0.1:{self.port}{path}",
            json=body,
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=timeout,
        )

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def write_config(self, servers: dict[str, Any], **gateway: Any) -> None:
        self.config.write_text(json.dumps(config_document(servers, **gateway)))

    def log_after_watchdog(self, within: float = 5.0) -> str:
        """The log once this gateway's watchdog is gone (it writes its notice, if any, before that)."""
        wait_until(lambda: not watchdogs_of(self.proc.pid), within)
        return self.log_text()

    def exit_code(self, within: float) -> int | None:
        try:
            return self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            return None


def config_document(servers: dict[str, Any], **gateway: Any) -> dict[str, Any]:
    settings = {"include_builtins": False, "offload_threshold": None, "shutdown_grace": 1, **gateway}
    return {"gateway": settings, "servers": servers}


@contextmanager
def serving(
    directory: Path,
    servers: dict[str, Any],
    *,
    run_id: str,
    watch: bool = False,
    port: int | None = None,
    **gateway: Any,
) -> Iterator[Serve]:
    """Run `nexus serve` on `servers`; afterwards kill it, its watchdog and every process marked `run_id`."""
    port = port or free_port()
    name = uuid.uuid4().hex[:8]  # not the run id: the gateway's own command line must not carry it
    config = directory / f"nexus-{name}.json"
    log = directory / f"serve-{name}.log"
    config.write_text(json.dumps(config_document(servers, **gateway)))
    args = [str(VENV_BIN / "nexus"), "serve", "--config", str(config), "--port", str(port), "--token", TOKEN]
    if not watch:
        args.append("--no-watch")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            args,
            env=child_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    serve = Serve(proc, port, config, log, run_id)
    try:
        yield serve
    finally:
        stop_process(proc, grace=5)
        for pid in watchdogs_of(proc.pid):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        kill_marked(run_id)
