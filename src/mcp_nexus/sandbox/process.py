"""Run one child process with a wall-clock timeout and capped, incrementally read output.

Shared by every backend: the child starts in its own process group, which is killed
with SIGKILL on timeout, when an output stream exceeds its cap, or when the caller is
cancelled; the child is always reaped before this returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

_READ_CHUNK = 64 * 1024
# After the child exits, how long its pipes may stay open (held by a stray descendant)
# before the whole group is killed and reading stops.
_DRAIN_GRACE_S = 0.5


@dataclass(frozen=True)
class ProcessOutcome:
    """Raw result of a bounded child process."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    timed_out: bool
    truncated: bool
    duration_s: float


@dataclass
class _CappedBuffer:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    overflowed: bool = False

    def add(self, chunk: bytes) -> bool:
        """Keep at most `cap` bytes; return False once the cap is exceeded."""
        room = self.cap - len(self.data)
        self.data += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.overflowed = True
        return not self.overflowed


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Sets `exited` as soon as the child is reaped.

    `Process.wait()` (Python 3.11) also waits for every pipe to close, which a stray
    descendant holding them could postpone forever.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _dropped(argv: Sequence[str], uid: int, gid: int) -> list[str]:
    """`argv` run as `uid`/`gid` with no supplementary groups, through util-linux's setpriv.

    Why not the `user=`/`group=` arguments of subprocess: not every event loop takes them
    (uvloop refuses them), and a Python preexec function in a process with threads can
    deadlock the child; setpriv drops the privileges itself, right before exec.
    """
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise OSError(errno.ENOENT, "setpriv (util-linux) is needed to drop privileges", "setpriv")
    return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *argv]


async def run_bounded_process(
    argv: Sequence[str],
    *,
    stdin_data: bytes,
    timeout_s: float,
    output_cap_bytes: int,
    pass_fds: Sequence[int] = (),
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    run_as: tuple[int, int] | None = None,
) -> ProcessOutcome:
    """Start `argv`, feed it `stdin_data`, and collect at most `output_cap_bytes` per stream.

    `run_as` (uid, gid) drops the child to that user and group (with no supplementary
    groups) before exec; it needs root.
    """
    if run_as is not None:
        argv = _dropped(argv, *run_as)
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _ExitAwareProtocol(limit=_READ_CHUNK, loop=loop),
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
        cwd=cwd,
        env=env,
    )
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    out = _CappedBuffer(output_cap_bytes)
    err = _CappedBuffer(output_cap_bytes)

    async def feed_stdin() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin_data)
            await proc.stdin.drain()
        proc.stdin.close()

    async def pump(stream: asyncio.StreamReader | None, buffer: _CappedBuffer) -> None:
        assert stream is not None
        while chunk := await stream.read(_READ_CHUNK):
            if not buffer.add(chunk):
                _kill_group(proc.pid)
                # Keep reading (and discarding) until EOF: a paused pipe never reports its close.

    feeder = asyncio.create_task(feed_stdin())
    readers = [asyncio.create_task(pump(proc.stdout, out)), asyncio.create_task(pump(proc.stderr, err))]
    timed_out = False
    try:
        try:
            await asyncio.wait_for(protocol.exited.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
            _kill_group(proc.pid)
        _done, pending = await asyncio.wait(readers, timeout=_DRAIN_GRACE_S)
        if pending:
            # A descendant that left the process group still holds the pipes open.
            _kill_group(proc.pid)
    finally:
        if proc.returncode is None:
            _kill_group(proc.pid)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await asyncio.shield(protocol.exited.wait())
        for task in (feeder, *readers):
            task.cancel()
        await asyncio.gather(feeder, *readers, return_exceptions=True)
        # Closing the transport closes our pipe ends, so nothing can keep them (or wait()) alive.
        transport.close()
        await proc.wait()
    assert proc.returncode is not None
    return ProcessOutcome(
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        exit_code=proc.returncode,
        timed_out=timed_out,
        truncated=out.overflowed or err.overflowed,
        duration_s=time.monotonic() - started,
    )


def decode_capped(raw: bytes) -> str:
    """Decode UTF-8 output, dropping a multi-byte character that the cap cut in half."""
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # the lead byte of the last character says how long it should be
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            if back < needed:
                raw = raw[:-back]
            break
    return raw.decode("utf-8", "replace")
