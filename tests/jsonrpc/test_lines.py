"""The line splitter every stdio endpoint reads through: whole lines, in order, whatever the chunking."""

from __future__ import annotations

import asyncio
import logging
import os

import pytest

from mcp_nexus.jsonrpc.lines import LineReader, LineSplitter


class Collected:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.overruns = 0
        self.prefixes: list[bytes] = []

    def line(self, line: bytes) -> None:
        self.lines.append(line)

    def overrun(self, prefix: bytes) -> None:
        self.overruns += 1
        self.prefixes.append(prefix)


async def test_lines_come_whole_however_the_bytes_are_cut() -> None:
    text = b'{"a":1}\n{"b":2}\n\n  \n{"c":"x\\ny"}\r\n{"d":4}'
    for size in (1, 2, 3, 7, len(text)):
        seen = Collected()
        splitter = LineSplitter(seen.line, seen.overrun)
        for start in range(0, len(text), size):
            splitter.feed(text[start : start + size])
        assert seen.lines == [b'{"a":1}', b'{"b":2}', b'{"c":"x\\ny"}\r'], size
        assert not splitter.ended.done()
        splitter.end()  # the last line had no newline: it still counts
        assert seen.lines[-1] == b'{"d":4}'
        assert splitter.ended.done()
        assert seen.overruns == 0


async def test_a_line_over_the_limit_is_dropped_alone() -> None:
    seen = Collected()
    splitter = LineSplitter(seen.line, seen.overrun, limit=10)
    splitter.feed(b'{"ok":1}\n' + b"x" * 8)
    splitter.feed(b"y" * 8)  # now over the limit: dropped, up to its newline
    splitter.feed(b"z" * 50)
    splitter.feed(b'zz\n{"ok":2}\n')
    splitter.end()
    assert seen.lines == [b'{"ok":1}', b'{"ok":2}']
    assert seen.overruns == 1
    assert seen.prefixes == [b"xxxxxxxxyyyyyyyy"]  # what was held when it overran: where its id is


async def test_an_unfinished_overrun_line_is_not_handed_on_at_the_end() -> None:
    seen = Collected()
    splitter = LineSplitter(seen.line, seen.overrun, limit=4)
    splitter.feed(b"123456789")
    splitter.end()
    splitter.end()  # twice is harmless
    assert seen.lines == []
    assert seen.overruns == 1


async def test_a_failing_handler_costs_one_line(caplog: pytest.LogCaptureFixture) -> None:
    handed: list[bytes] = []

    def handle(line: bytes) -> None:
        handed.append(line)
        if line == b"bad":
            raise RuntimeError("handler bug")

    splitter = LineSplitter(handle, lambda: None)
    with caplog.at_level(logging.ERROR):
        splitter.feed(b"one\nbad\ntwo\n")
    assert handed == [b"one", b"bad", b"two"]
    assert "a line handler failed" in caplog.text


async def test_a_large_line_in_many_chunks_is_not_quadratic() -> None:
    # 32 MB in 64 KB chunks: copying the whole buffer per chunk would move ~8 GB.
    seen = Collected()
    splitter = LineSplitter(seen.line, seen.overrun)
    chunk = b"a" * 65536
    loop = asyncio.get_running_loop()
    started = loop.time()
    for _ in range(512):
        splitter.feed(chunk)
    splitter.feed(b"\n")
    assert loop.time() - started < 2.0
    assert len(seen.lines) == 1 and len(seen.lines[0]) == 512 * 65536


async def test_a_pipe_read_through_the_line_reader_ends_with_the_pipe() -> None:
    loop = asyncio.get_running_loop()
    seen = Collected()
    splitter = LineSplitter(seen.line, seen.overrun)
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        transport, _ = await loop.connect_read_pipe(lambda: LineReader(splitter), pipe)
        os.write(write_fd, b'{"x":1}\n{"y"')
        os.write(write_fd, b":2}\n")
        os.close(write_fd)
        await asyncio.wait_for(splitter.ended, 5)
        transport.close()
    assert seen.lines == [b'{"x":1}', b'{"y":2}']
