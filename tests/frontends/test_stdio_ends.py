"""Issue item 8: `nexus serve --stdio` serves whatever its stdin and stdout are.

It used to die with SIGABRT (exit 134) unless both ends were pipes: uvloop handed a regular
file or /dev/null to libuv, whose epoll refuses them, and libuv aborts on that refusal. Here
the real command runs with every pairing of pipe, regular file, /dev/null, socketpair and
terminal (a pty) on stdin and stdout: it exits 0, and a ping on stdin is answered on stdout,
also when stdin ends right after it (`echo ping | nexus serve --stdio > out.txt`).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import socket
import subprocess
import termios
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from robustness.gateways import echo_upstream
from support.processes import VENV_BIN, child_env, stop_process

KINDS = ("pipe", "file", "null", "socket", "pty")
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
RUN_TIMEOUT = 60.0  # a wedged case fails alone, with its output (generous: CI machines are shared)


@dataclass
class Ends:
    """One case's two ends: the fds the child gets, and what the parent does with its own sides."""

    stdin: int = -1
    stdout: int = -1
    child_only: list[int] = field(default_factory=list)  # closed in the parent once the child runs
    feed: Callable[[], None] = lambda: None
    collect: Callable[[], bytes] = lambda: b""
    cleanup: list[Callable[[], None]] = field(default_factory=list)


def _quiet_pty() -> tuple[int, int]:
    """A pty without echo (else the master would read the request back) in canonical mode (^D is EOF)."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    return master, slave


def _drain(read: Callable[[], bytes]) -> Callable[[], bytes]:
    """Read in a thread until EOF (the child must never block on a full buffer); collect joins it."""
    chunks: list[bytes] = []

    def run() -> None:
        with contextlib.suppress(OSError):  # a pty master reads EIO once every slave is closed
            while chunk := read():
                chunks.append(chunk)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def collect() -> bytes:
        thread.join(timeout=5)
        return b"".join(chunks)

    return collect


def _open_end(kind: str, folder: Path, reading: bool) -> tuple[int, Any]:
    """The child's fd for one end, and the parent's side of it (an fd, a socket, a path or None)."""
    if kind == "pipe":
        read, write = os.pipe()
        return (read, write) if reading else (write, read)
    if kind == "file":
        path = folder / ("stdin.jsonl" if reading else "stdout.jsonl")
        return os.open(path, os.O_RDONLY if reading else os.O_WRONLY | os.O_CREAT | os.O_TRUNC), path
    if kind == "null":
        return os.open(os.devnull, os.O_RDONLY if reading else os.O_WRONLY), None
    if kind == "socket":
        ours, theirs = socket.socketpair()
        return theirs.detach(), ours
    master, slave = _quiet_pty()
    return slave, master


def _stdin(kind: str, data: bytes, ends: Ends, folder: Path) -> None:
    if kind == "file":
        (folder / "stdin.jsonl").write_bytes(data)
    ends.stdin, ours = _open_end(kind, folder, reading=True)
    ends.child_only.append(ends.stdin)
    if kind == "pipe":

        def feed_pipe() -> None:
            os.write(ours, data)
            os.close(ours)

        ends.feed = feed_pipe
    elif kind == "socket":

        def feed_socket() -> None:
            ours.sendall(data)
            ours.shutdown(socket.SHUT_WR)

        ends.feed = feed_socket
        ends.cleanup.append(ours.close)
    elif kind == "pty":

        def feed_pty() -> None:
            # ^D at a line start ends the input; the master stays open (closing it hangs the terminal up)
            os.write(ours, data + b"\x04")

        ends.feed = feed_pty
        ends.cleanup.append(lambda: os.close(ours))


def _stdout(kind: str, ends: Ends, folder: Path) -> None:
    ends.stdout, ours = _open_end(kind, folder, reading=False)
    ends.child_only.append(ends.stdout)
    if kind in ("pipe", "pty"):
        ends.collect = _drain(lambda: os.read(ours, 65536))
        ends.cleanup.append(lambda: os.close(ours))
    elif kind == "socket":
        ends.collect = _drain(lambda: ours.recv(65536))
        ends.cleanup.append(ours.close)
    elif kind == "file":
        ends.collect = ours.read_bytes


@dataclass
class Outcome:
    case: str
    returncode: int | None
    output: bytes
    stderr: str


def run_case(stdin: str, stdout: str, config: Path, folder: Path, data: bytes = PING) -> Outcome:
    folder.mkdir(parents=True, exist_ok=True)
    ends = Ends()
    _stdin(stdin, data, ends, folder)
    _stdout(stdout, ends, folder)
    stderr_path = folder / "stderr.log"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [str(VENV_BIN / "nexus"), "serve", "--stdio", "--no-watch", "--config", str(config)],
            stdin=ends.stdin,
            stdout=ends.stdout,
            stderr=stderr,
            env=child_env(),
            start_new_session=True,
        )
    try:
        for fd in ends.child_only:
            os.close(fd)
        ends.feed()
        try:
            returncode: int | None = proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            returncode = None
        output = ends.collect() if returncode is not None else b""
    finally:
        stop_process(proc)  # type: ignore[arg-type]
        for cleanup in ends.cleanup:
            with contextlib.suppress(OSError):
                cleanup()
    return Outcome(
        f"stdin={stdin} stdout={stdout}", returncode, output, stderr_path.read_text(errors="replace")
    )


def answers(output: bytes) -> dict[Any, dict[str, Any]]:
    found = {}
    for line in output.replace(b"\r\n", b"\n").split(b"\n"):
        if line.strip():
            message = json.loads(line)
            found[message.get("id")] = message
    return found


def check(outcome: Outcome, stdin: str, stdout: str) -> list[str]:
    problems = []
    if outcome.returncode != 0:
        what = "still running" if outcome.returncode is None else f"exit {outcome.returncode}"
        problems.append(f"{outcome.case}: {what}; stderr ends:\n{outcome.stderr[-800:]}")
        return problems
    try:
        seen = answers(outcome.output)
    except ValueError:
        return [f"{outcome.case}: output is not JSON lines: {outcome.output[:300]!r}"]
    if stdout == "null":
        return problems
    if stdin == "null":
        if seen:
            problems.append(f"{outcome.case}: answers to nothing: {seen}")
    elif seen.get(1) != {"jsonrpc": "2.0", "id": 1, "result": {}}:
        problems.append(f"{outcome.case}: the ping was not answered: {outcome.output[:300]!r}")
    return problems


def run_matrix(pairs: list[tuple[str, str]], config: Path, folder: Path) -> list[str]:
    def one(pair: tuple[str, str]) -> list[str]:
        stdin, stdout = pair
        return check(run_case(stdin, stdout, config, folder / f"{stdin}-{stdout}"), stdin, stdout)

    with ThreadPoolExecutor(max_workers=5) as pool:
        return [problem for problems in pool.map(one, pairs) for problem in problems]


def write_config(folder: Path, *, builtins: bool) -> Path:
    document: dict[str, Any] = {"mcpServers": {}}
    if not builtins:
        document["gateway"] = {"include_builtins": False}
    path = folder / "nexus.json"
    path.write_text(json.dumps(document))
    return path


def test_every_pairing_of_ends_serves_and_exits_0(tmp_path: Path) -> None:
    config = write_config(tmp_path, builtins=False)
    pairs = [(stdin, stdout) for stdin in KINDS for stdout in KINDS]
    problems = run_matrix(pairs, config, tmp_path)
    assert not problems, "\n".join(problems)


def test_with_the_builtin_servers_too(tmp_path: Path) -> None:
    """The default config (built-in servers starting beside the frontend): the issue's two commands."""
    config = write_config(tmp_path, builtins=True)
    pairs = [("null", "file"), ("pipe", "file"), ("pty", "socket")]
    problems = run_matrix(pairs, config, tmp_path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_requests_read_before_eof_are_answered(tmp_path: Path, stdin: str) -> None:
    """stdin ends right after a call that needs an upstream: its answer is still written, then exit 0."""
    config = tmp_path / "nexus.json"
    document = {"gateway": {"include_builtins": False}, "servers": {"echo": echo_upstream()}}
    config.write_text(json.dumps(document))
    data = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo.echo",'
        b'"arguments":{"said":"after eof"}}}\n'
    )
    outcome = run_case(stdin, "file", config, tmp_path / "case", data)
    assert outcome.returncode == 0, outcome.stderr[-800:]
    seen = answers(outcome.output)
    assert "result" in seen.get(1, {}), outcome.output
    assert seen[2]["result"]["content"][0]["text"] == '{"said":"after eof"}', outcome.output
