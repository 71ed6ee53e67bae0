"""This process's stdin and stdout as line-delimited JSON-RPC ends, whatever they are.

A pipe, a socket or a terminal is watched by the event loop (`connect_read_pipe` /
`connect_write_pipe`). A regular file or /dev/null cannot be: epoll refuses them (EPERM),
asyncio's pipe transports raise ValueError for a regular file, and uvloop hands the fd to
libuv, which calls abort() when epoll refuses it (the process dies with SIGABRT). So such
an end is read by a thread, in chunks, into the same `LineSplitter`, and written with
plain blocking writes, one whole message per write (a file or /dev/null never blocks long).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import stat
import threading
import time
from typing import BinaryIO, Protocol

from mcp_nexus.jsonrpc.lines import LineReader, LineSplitter

logger = logging.getLogger(__name__)

READ_CHUNK = 256 * 1024
CLOSE_WAIT_S = 5.0  # at most this long the last answers wait to leave a pipe nobody reads


def pollable(fd: int) -> bool:
    """Can the event loop watch `fd`? Pipes and sockets yes; a character device only if it polls
    (a terminal does, /dev/null does not); a regular file, a directory or anything else no."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    if not stat.S_ISCHR(mode):
        return False
    if not hasattr(select, "epoll"):
        return os.isatty(fd)
    probe = select.epoll()
    try:
        probe.register(fd, select.EPOLLIN)
    except OSError:
        return False
    finally:
        probe.close()
    return True


class LineInput(Protocol):
    def close(self) -> None: ...


class LineOutput(Protocol):
    def write(self, frame: bytes) -> None: ...

    async def aclose(self) -> None: ...


async def read_lines(source: BinaryIO, splitter: LineSplitter) -> LineInput:
    """Feed what `source` delivers into `splitter` until it ends (`splitter.ended`)."""
    if pollable(source.fileno()):
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: LineReader(splitter), source
        )
        return transport
    reader = _ThreadReader(source.fileno(), splitter)
    reader.start()
    return reader


async def open_output(sink: BinaryIO) -> LineOutput:
    """A writer of one message per line to `sink`."""
    if pollable(sink.fileno()):
        lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        transport, _ = await asyncio.get_running_loop().connect_write_pipe(lambda: _WriteEnd(lost), sink)
        return _PipeOutput(transport, lost)
    return _BlockingOutput(sink.fileno())


class _ThreadReader:
    """Reads a file the event loop cannot watch; each chunk is split on the loop before the next is read."""

    def __init__(self, fd: int, splitter: LineSplitter) -> None:
        self._fd = fd
        self._splitter = splitter
        self._loop = asyncio.get_running_loop()
        self._stopping = threading.Event()
        # A daemon: a read that blocks (a device) must not keep the process alive at exit.
        self._thread = threading.Thread(target=self._run, name="stdin-reader", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stopping.set()

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    data = os.read(self._fd, READ_CHUNK)
                except BlockingIOError:  # a non-blocking device with nothing yet
                    time.sleep(0.05)
                    continue
                if not data:
                    break
                fed = threading.Event()
                self._loop.call_soon_threadsafe(self._feed, data, fed)
                while not fed.wait(0.5):  # one chunk at a time: the file is not read faster than served
                    if self._stopping.is_set() or self._loop.is_closed():
                        return
        except OSError as exc:
            logger.debug("stdin: read failed (%s): the input ends", exc)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                self._loop.call_soon_threadsafe(self._splitter.end)

    def _feed(self, data: bytes, fed: threading.Event) -> None:
        try:
            self._splitter.feed(data)
        finally:
            fed.set()


class _WriteEnd(asyncio.Protocol):
    def __init__(self, lost: asyncio.Future[None]) -> None:
        self._lost = lost

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._lost.done():
            self._lost.set_result(None)


class _PipeOutput:
    def __init__(self, transport: asyncio.WriteTransport, lost: asyncio.Future[None]) -> None:
        self._transport = transport
        self._lost = lost

    def write(self, frame: bytes) -> None:
        self._transport.write(frame + b"\n")  # one write per message keeps lines whole

    async def aclose(self) -> None:
        """Close once what is buffered has left (a transport flushes before it reports lost)."""
        self._transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._lost), CLOSE_WAIT_S)


class _BlockingOutput:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, frame: bytes) -> None:
        view = memoryview(frame + b"\n")
        while view:
            view = view[os.write(self._fd, view) :]

    async def aclose(self) -> None:
        return None
