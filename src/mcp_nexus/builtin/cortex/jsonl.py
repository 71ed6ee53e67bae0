"""Append-only JSONL files: a folder-wide lock, durable appends, and incremental reads.

Writers take an exclusive `flock` on the folder's lock file, so appends from threads and
processes never interleave; readers take a shared one, so they never see half a record
from a live writer. Any unterminated last line a reader finds is therefore left by a
crash (a torn line): it is reported and skipped, and the next writer ends it with a
newline before appending, so the torn bytes stay a bad line of their own and never glue
themselves onto a good record.
"""

from __future__ import annotations

import errno
import fcntl
import json
import mmap
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from mcp_nexus.builtin.cortex.errors import DiskFullError, WriteFailedError


@contextmanager
def folder_lock(lock_path: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold an advisory lock on `lock_path` (created if missing) for the block."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def encode_record(record: dict[str, Any]) -> bytes:
    """One compact JSON line; non-ASCII text is kept readable in the file."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def append_lines(path: Path, payload: bytes) -> int:
    """Append complete lines and make them durable; returns the file's size before. Call with the
    folder lock held exclusively.

    All or nothing: the lines go in one `write`, and when it fails or falls short (a full disk,
    a quota, a file-size limit, an I/O error) or the `fsync` fails, the file is cut back to its
    size before (a file this call created is removed), so no partial record is ever left for a
    later load to report, and a `WriteFailedError` (`DiskFullError` for ENOSPC and EDQUOT) names
    the file and the reason.
    """
    new_file = not path.exists()
    if new_file:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise _write_failed(path, exc) from exc
    size = 0
    try:
        size = os.fstat(fd).st_size
        if size and _last_byte(path, size) != b"\n":
            payload = b"\n" + payload  # terminate a torn line left by a crash
        written = os.write(fd, payload)
        if written != len(payload):
            # A regular file takes less only at a limit: the next write names it (ENOSPC, EFBIG).
            os.write(fd, payload[written:])
            raise OSError(errno.EIO, f"short write ({written} of {len(payload)} bytes)")
        os.fsync(fd)
    except OSError as exc:
        _undo(fd, path, size, remove=new_file)
        raise _write_failed(path, exc) from exc
    finally:
        os.close(fd)
    if new_file:
        _fsync_directory(path.parent)
    return size


def truncate_back(path: Path, size: int) -> None:
    """Undo a complete append to `path` (a later file of the same transaction failed)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        _undo(fd, path, size, remove=False)
    finally:
        os.close(fd)


def _undo(fd: int, path: Path, size: int, *, remove: bool) -> None:
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
        if remove and size == 0:
            path.unlink(missing_ok=True)
    except OSError:  # nothing more can be done; a torn tail stays a reported bad line
        pass


def _write_failed(path: Path, exc: OSError) -> WriteFailedError:
    reason = exc.strerror or str(exc)
    if exc.errno in _DISK_FULL:
        return DiskFullError(f"disk full: cannot append to {path} ({reason}); nothing was written")
    return WriteFailedError(f"cannot append to {path} ({reason}); nothing was written")


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(size - 1)
        return handle.read(1)


def _fsync_directory(directory: Path) -> None:
    """Make a newly created file's directory entry durable too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ParsedChunk(NamedTuple):
    """The complete lines read from a file in one go.

    `records` holds the JSON object of every good line and `numbers` their 1-based line
    numbers, index for index: a `range` when no line was skipped, so a clean file costs
    nothing per line. `bad_lines` are the other lines (not JSON, not an object) with the
    reason, in line order.
    """

    records: list[dict[str, Any]]
    numbers: Sequence[int]
    bad_lines: list[tuple[int, str]]


@dataclass(slots=True)
class ReadPosition:
    """How far a file has been consumed: bytes up to the last complete line, and lines seen."""

    offset: int = 0
    lines: int = 0


@dataclass(frozen=True, slots=True)
class TornTail:
    """An unterminated last line: its line number, byte offset and length."""

    number: int
    offset: int
    length: int


class NewLines(NamedTuple):
    """Complete lines read from a file and not parsed yet: `line_count` lines from `first_number`."""

    data: bytes  # ends with a newline unless empty
    first_number: int
    line_count: int


NO_NEW_LINES = NewLines(b"", 1, 0)


def read_new_lines(path: Path, position: ReadPosition) -> tuple[NewLines, TornTail | None]:
    """The complete lines appended since `position` (read with one call), and advance past them.

    An unterminated tail is not consumed: it is returned as a `TornTail` so the caller can
    report it; once a writer ends it with a newline it is read again as a bad line.
    """
    size = path.stat().st_size
    if size <= position.offset:
        return NO_NEW_LINES, None
    with path.open("rb") as handle:
        handle.seek(position.offset)
        data = handle.read(size - position.offset)
    end = data.rfind(b"\n") + 1
    count = data.count(b"\n", 0, end)
    torn = None
    if end < len(data):
        torn = TornTail(
            number=position.lines + count + 1, offset=position.offset + end, length=len(data) - end
        )
        data = data[:end]
    lines = NewLines(data, position.lines + 1, count)
    position.offset += end
    position.lines += count
    return lines, torn


class ParkedLines:
    """Lines read now and parsed later, held outside the C heap meanwhile.

    Megabytes of bytes held while other large structures are built, then freed, leave holes
    in the C heap that are never given back to the system (45 MB of resident memory at
    300,000 relations); an anonymous memory map is given back whole when it is closed.
    """

    def __init__(self, lines: NewLines) -> None:
        self._size = len(lines.data)
        self._map = mmap.mmap(-1, max(self._size, 1))
        self._map.write(lines.data)
        self.first_number, self.line_count = lines.first_number, lines.line_count

    def take(self) -> NewLines:
        """The lines again (once): the memory map is released."""
        data = self._map[: self._size]
        self._map.close()
        return NewLines(data, self.first_number, self.line_count)


def parse_lines(lines: NewLines) -> ParsedChunk:
    """Parse lines read by `read_new_lines`: the objects, their line numbers, the bad lines."""
    data, first_number, line_count = lines
    if not line_count:
        return ParsedChunk([], (), [])
    # Fast path: the lines joined into one JSON array and parsed by one call, a fifth
    # quicker than a call per line here. A blank or broken line makes the array invalid, and
    # a line holding two values (or a value cut across two lines) changes the count. (Only
    # hand-made lines can get past both, e.g. an object split over two lines next to a line
    # holding two objects; neither the cortex nor a crash writes such lines.)
    records = _parse_joined(data[:-1].replace(b"\n", b","), line_count)
    if records is not None:
        return _objects_only(ParsedChunk(records, range(first_number, first_number + line_count), []))
    # Some line is bad: the same, block by block, so only a block holding a bad line is
    # parsed line by line (one torn line must not slow every later load of a large file).
    raw_lines = data.split(b"\n")[:-1]
    records = []
    numbers: list[int] = []
    bad_lines: list[tuple[int, str]] = []
    for block_start in range(0, len(raw_lines), _BLOCK_LINES):
        block = raw_lines[block_start : block_start + _BLOCK_LINES]
        block_first = first_number + block_start
        parsed = _parse_joined(b",".join(block), len(block))
        if parsed is not None:
            records.extend(parsed)
            numbers.extend(range(block_first, block_first + len(block)))
            continue
        for number, raw in enumerate(block, block_first):
            if not raw.strip():
                continue
            try:
                records.append(orjson.loads(raw))
            except orjson.JSONDecodeError as exc:
                bad_lines.append((number, f"invalid JSON (JSONDecodeError: {exc})"))
                continue
            numbers.append(number)
    return _objects_only(ParsedChunk(records, numbers, bad_lines))


def _objects_only(chunk: ParsedChunk) -> ParsedChunk:
    """The chunk with every value that is not an object moved to `bad_lines`."""
    if set(map(type, chunk.records)) <= {dict}:  # one pass in C: the usual case
        return chunk
    records: list[Any] = []
    numbers: list[int] = []
    bad_lines = list(chunk.bad_lines)
    for number, record in zip(chunk.numbers, chunk.records, strict=True):
        if type(record) is dict:
            records.append(record)
            numbers.append(number)
        else:
            bad_lines.append((number, "not an object"))
    bad_lines.sort()
    return ParsedChunk(records, numbers, bad_lines)


_BLOCK_LINES = 1_000


def _parse_joined(joined: bytes, count: int) -> list[Any] | None:
    """The values of `count` comma-joined lines, or None unless they are exactly `count` values."""
    try:
        records = orjson.loads(b"[" + joined + b"]")
    except orjson.JSONDecodeError:
        return None
    return records if len(records) == count else None  # type: ignore[no-any-return]
