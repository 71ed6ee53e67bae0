"""Newline-delimited JSON-RPC on a byte stream (stdio): one message per line, into a peer.

The splitter runs inside the transport's `data_received` callback: each whole line is
handed on in the same event-loop turn that read it. A reading task over a `StreamReader`
costs a task wake-up, a waiter future and a buffer copy per line; on the stdio hot path a
call crosses two pipes, so that was four of each per call (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import cast

logger = logging.getLogger(__name__)

LINE_LIMIT = 512 * 1024 * 1024  # one JSON-RPC message per line; results can be large
OVERRUN_PREFIX = 1024  # bytes of a dropped line handed to `on_overrun` (where its id is: leading_id.py)


class LineSplitter:
    """Bytes as they arrive -> one `on_line` call per non-blank line, without its newline.

    A line longer than `limit` is dropped whole (`on_overrun` gets its first OVERRUN_PREFIX
    bytes, once; the rest up to its newline is skipped); the stream's last line counts without a
    newline too. `ended` resolves when the stream has ended and every line was handed on.
    """

    __slots__ = ("_buffer", "_limit", "_on_line", "_on_overrun", "_skipping", "ended", "source")

    def __init__(
        self,
        on_line: Callable[[bytes], None],
        on_overrun: Callable[[bytes], None],
        limit: int = LINE_LIMIT,
    ) -> None:
        self._on_line = on_line
        self._on_overrun = on_overrun
        self._limit = limit
        self._buffer = bytearray()  # a line begun but not ended (appended in place: no O(n²) copies)
        self._skipping = False  # inside a line that overran the limit
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # The transport read from, once connected: a line handler may hold its reading back.
        self.source: asyncio.ReadTransport | None = None

    def pause_reading(self) -> None:
        """Read nothing more for now (what is being split goes on): the writer blocks on its pipe.
        (A closing transport ignores both; `ended` is no guide: a cancelled waiter cancels it.)"""
        if self.source is not None:
            self.source.pause_reading()

    def resume_reading(self) -> None:
        if self.source is not None:
            self.source.resume_reading()

    def feed(self, data: bytes) -> None:
        start = 0
        end = data.find(b"\n")
        if self._skipping:
            if end < 0:
                return
            self._skipping = False
            start, end = end + 1, data.find(b"\n", end + 1)
        while end >= 0:
            if self._buffer:
                self._buffer += data[start:end]
                line = bytes(self._buffer)
                self._buffer.clear()
            else:
                line = data[start:end]
            self._hand_on(line)
            start, end = end + 1, data.find(b"\n", end + 1)
        if start < len(data):
            self._buffer += data[start:]
            if len(self._buffer) > self._limit:
                prefix = bytes(self._buffer[:OVERRUN_PREFIX])
                self._buffer.clear()
                self._skipping = True
                self._on_overrun(prefix)

    def end(self) -> None:
        """The stream ended: hand on a last line that had no newline, then resolve `ended`."""
        if self.ended.done():
            return
        if self._buffer and not self._skipping:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._hand_on(line)
        self.ended.set_result(None)

    def _hand_on(self, line: bytes) -> None:
        # isspace() stops at the first non-blank byte; strip() would copy a large line first.
        if line and not line.isspace():
            try:
                self._on_line(line)
            except Exception:  # a bug behind one line must not end the transport (it would, raised here)
                logger.exception("a line handler failed; the stream goes on")


class LineReader(asyncio.Protocol):
    """A read pipe's protocol that splits what arrives into lines (`loop.connect_read_pipe`)."""

    def __init__(self, splitter: LineSplitter) -> None:
        self.splitter = splitter

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.splitter.source = cast(asyncio.ReadTransport, transport)  # a read pipe's transport

    def data_received(self, data: bytes) -> None:
        self.splitter.feed(data)

    def eof_received(self) -> bool:
        self.splitter.end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.splitter.end()


class LineSubprocessProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """A child process's protocol whose stdout goes through a `LineSplitter` (stdin, stderr as usual).

    `Process.stdout` stays an (unfed, then ended) StreamReader; nobody should read it.
    """

    def __init__(self, splitter: LineSplitter, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.splitter = splitter

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # uvloop's transports are not registered with asyncio's ABCs (isinstance says no).
        stdout = cast(asyncio.SubprocessTransport, transport).get_pipe_transport(1)
        self.splitter.source = cast(asyncio.ReadTransport | None, stdout)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self.splitter.feed(data if isinstance(data, bytes) else data.encode())
        else:
            super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.splitter.end()
        super().pipe_connection_lost(fd, exc)
