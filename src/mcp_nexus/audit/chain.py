"""The hash chain of the audit files: how a line is made, and how the files are checked.

A line is one JSON object with `seq` (1, 2, ... across all files) and `prev` (the SHA-256 of
the previous line's bytes; 64 zeros before the first). Editing a line breaks the next line's
`prev`; removing one breaks the `seq` run and a `prev`; swapping two breaks both. Files are
named by the `seq` of their first line, so their order is their names' order, and a new file
(rotation) starts with the `prev` of the last line of the one before: the chain runs on. The
last line has no successor to vouch for it, so the writer keeps a head file (`HEAD`: the
last `seq` and hash); `verify` checks the last line against it. (Whoever can rewrite every
file and the head can rewrite history: copy the head's hash elsewhere now and then, e.g. with
`nexus audit verify` in a cron job's log, to pin it.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

GENESIS = "0" * 64
HEAD_NAME = "HEAD"
FILE_PREFIX = "audit-"
FILE_SUFFIX = ".jsonl"


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def make_line(seq: int, prev: str, record: dict[str, Any]) -> bytes:
    """One line (without its newline): `seq` and `prev` first, then the record's fields."""
    return orjson.dumps({"seq": seq, "prev": prev, **record})


def file_name(first_seq: int) -> str:
    return f"{FILE_PREFIX}{first_seq:012d}{FILE_SUFFIX}"


def log_files(folder: Path) -> list[Path]:
    """The audit files of a folder in chain order (their names sort as their first lines' seq)."""
    return sorted(folder.glob(f"{FILE_PREFIX}*{FILE_SUFFIX}"))


@dataclass(frozen=True, slots=True)
class Head:
    seq: int
    hash: str

    @staticmethod
    def read(folder: Path) -> Head | None:
        try:
            data = json.loads((folder / HEAD_NAME).read_text())
            return Head(int(data["seq"]), str(data["hash"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, folder: Path) -> None:
        temporary = folder / (HEAD_NAME + ".tmp")
        temporary.write_text(json.dumps({"seq": self.seq, "hash": self.hash}) + "\n")
        temporary.replace(folder / HEAD_NAME)


def lines(folder: Path) -> Iterator[tuple[Path, int, bytes]]:
    """Every line of every file, in order: (file, line number from 1, bytes without the newline)."""
    for path in log_files(folder):
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                yield path, number, raw.rstrip(b"\n")


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    lines: int
    files: int
    problem: str | None = None
    head: Head | None = None


def verify(folder: Path) -> Verdict:
    """Check the whole chain; the first problem names the file and line where it shows."""
    expected_seq, prev, count, before = 1, GENESIS, 0, "the start"
    files = log_files(folder)
    for path, number, raw in lines(folder):
        where = f"{path.name} line {number}"
        try:
            record = json.loads(raw)
            seq, claimed = record["seq"], record["prev"]
        except (ValueError, KeyError, TypeError):
            return Verdict(False, count, len(files), f"{where}: not an audit record (unreadable JSON)")
        if seq != expected_seq:
            problem = f"{where}: seq {seq} where {expected_seq} belongs (lines removed or reordered)"
            return Verdict(False, count, len(files), problem)
        if claimed != prev:
            problem = f"{before} was edited: {where} carries another hash for it"
            return Verdict(False, count, len(files), problem)
        prev, expected_seq, count, before = line_hash(raw), expected_seq + 1, count + 1, where
    head = Head.read(folder)
    if count and head is None:
        return Verdict(False, count, len(files), f"{HEAD_NAME} is missing: the last line cannot be checked")
    if head is not None and (head.seq != count or head.hash != prev):
        last = f"{files[-1].name} line {expected_seq - 1}" if files else "the log"
        if head.seq > count:
            problem = f"{last}: the log ends at seq {count} but {HEAD_NAME} says {head.seq} (lines removed)"
        else:
            problem = f"{last}: the last line does not match {HEAD_NAME} (it was edited, or lines added)"
        return Verdict(False, count, len(files), problem, head)
    return Verdict(True, count, len(files), None, head)
