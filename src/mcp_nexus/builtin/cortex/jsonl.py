"""Append-only JSONL files: a folder-wide lock, durable appends, and incremental reads.

Writers take an exclusive `flock` on the folder's lock file, so appends from threads and
processes never interleave; readers take a shared one, so they never see half a record
from a live writer. Any unterminated last line a reader finds is therefore left by a
crash (a torn line): it is reported and skipped, and the next writer ends it with a
newline before appending, so the torn bytes stay a bad line of their own and never glue
themselves onto a good record.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple


@contextmanager
def folder_lock(lock_path: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold an advisory lock on `lock_path` (created if missing) for the block."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def encode_record(record: dict[str, Any]) -> bytes:
    """One compact JSON line; non-ASCII text is kept readable in the file."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def append_lines(path: Path, payload: bytes) -> None:
    """Append complete lines and make them durable. Call with the folder lock held exclusively."""
    new_file = not path.exists()
    if new_file:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and _last_byte(path, size) != b"\n":
            payload = b"\n" + payload  # terminate a torn line left by a crash
        view = memoryview(payload)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    if new_file:
        _fsync_directory(path.parent)


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


class ParsedLine(NamedTuple):
    """One line read from a file: its 1-based number and either a record or why it is bad."""

    number: int
    record: dict[str, Any] | None
    error: str | None = None


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


def read_new_lines(path: Path, position: ReadPosition) -> tuple[list[ParsedLine], TornTail | None]:
    """Parse the complete lines appended since `position`, and advance it past them.

    An unterminated tail is not consumed: it is returned as a `TornTail` so the caller can
    report it; once a writer ends it with a newline it is read again as a bad line.
    """
    size = path.stat().st_size
    if size <= position.offset:
        return [], None
    with path.open("rb") as handle:
        handle.seek(position.offset)
        data = handle.read(size - position.offset)
    end = data.rfind(b"\n") + 1
    torn = None
    if end < len(data):
        torn = TornTail(
            number=position.lines + data.count(b"\n", 0, end) + 1,
            offset=position.offset + end,
            length=len(data) - end,
        )
    raw_lines = data[:end].split(b"\n")[:-1]
    parsed = _parse_lines(raw_lines, first_number=position.lines + 1)
    position.offset += end
    position.lines += len(raw_lines)
    return parsed, torn


def _parse_lines(raw_lines: list[bytes], first_number: int) -> list[ParsedLine]:
    numbered = [(first_number + index, raw) for index, raw in enumerate(raw_lines) if raw.strip()]
    # Fast path: one json.loads over the whole chunk is several times quicker than one per line.
    try:
        records = json.loads(b"[" + b",".join(raw for _, raw in numbered) + b"]")
    except ValueError:
        records = None
    if records is not None and len(records) == len(numbered):
        # tuple.__new__ skips the named tuple's Python-level constructor (one per line).
        make = tuple.__new__
        return [
            make(ParsedLine, (number, record, None))
            if type(record) is dict
            else ParsedLine(number, None, "not an object")
            for (number, _), record in zip(numbered, records, strict=True)
        ]
    parsed: list[ParsedLine] = []
    for number, raw in numbered:
        try:
            record = json.loads(raw)
        except ValueError as exc:
            parsed.append(ParsedLine(number, None, f"invalid JSON ({exc.__class__.__name__}: {exc})"))
            continue
        if isinstance(record, dict):
            parsed.append(ParsedLine(number, record))
        else:
            parsed.append(ParsedLine(number, None, "not an object"))
    return parsed
