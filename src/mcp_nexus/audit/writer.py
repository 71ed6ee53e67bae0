"""The audit log's writer: events in, chained lines out, never in the way of a call.

A subscriber only appends the event to a bounded queue (no formatting, no hashing, no I/O on
the call's path); a full queue drops the record and counts it, and the count is written as a
record of its own once there is room, so a gap is never silent. One task drains the queue in
batches (what gathered within BATCH_WINDOW_S of the first record) and writes them in a worker thread: lines are built, chained (chain.py), appended,
and the head updated. The current file is rotated past `max_file_bytes` or `max_file_age`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from mcp_nexus.audit.admin_action import AdminAction
from mcp_nexus.audit.chain import GENESIS, Head, file_name, line_hash, log_files, make_line
from mcp_nexus.audit.record import admin_record, call_record, dropped_record
from mcp_nexus.config.audit import AuditSettings
from mcp_nexus.events import EventBus
from mcp_nexus.paths import data_subdir
from mcp_nexus.pipeline.call_finished import CallFinished

logger = logging.getLogger(__name__)

BATCH_WINDOW_S = 0.25
"""How long the writer lets records gather after the first of a batch. Without it a client calling
one tool after another made one batch per call: a worker-thread hop, a file append and a HEAD
rewrite each (~100 Python calls and two opens per tools/call, measured with
bench/profile_gateway.py). At 50 ms a client calling back to back over HTTP still cost the
gateway ~90-135 µs of CPU per call more than at 250 ms (a batch of ~10 records instead of ~50;
docs/PERFORMANCE.md); a record reaches the file within 250 ms (at stop at once)."""


def _epoch(iso: Any) -> float:
    """When a file's first line was written (its age decides rotation); now when unreadable."""
    try:
        return datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()


def audit_folder(settings: AuditSettings) -> Path:
    return Path(settings.dir).expanduser() if settings.dir else data_subdir("audit")


class AuditLog:
    def __init__(self, settings: AuditSettings, bus: EventBus, folder: Path | None = None) -> None:
        self.settings = settings
        self.bus = bus
        self.folder = folder or audit_folder(settings)
        self._queue: deque[tuple[object, float]] = deque()
        self._wake = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        self.dropped = 0  # records the full queue could not take, since start
        self._dropped_unwritten = 0
        self.written = 0
        # The chain's state (the writer thread's alone once started).
        self._seq, self._prev = 0, GENESIS
        self._path: Path | None = None
        self._bytes, self._opened = 0, 0.0
        self._written_state: tuple[int, str, Path | None, int, float] | None = None  # within a batch

    # -- lifetime ------------------------------------------------------------------------------

    async def start(self) -> None:
        await asyncio.to_thread(self._resume)
        self._unsubscribe = [
            self.bus.subscribe(CallFinished, self._enqueue),
            self.bus.subscribe(AdminAction, self._enqueue),
        ]
        self._task = asyncio.create_task(self._drain_forever(), name="audit-writer")

    async def stop(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task  # it writes what was queued before it ends
            self._task = None

    def status(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "written": self.written,
            "queued": len(self._queue),
            "dropped": self.dropped,
            "seq": self._seq,
        }

    # -- the call's side: O(1), never blocks -------------------------------------------------

    def _enqueue(self, event: object) -> None:
        if len(self._queue) >= self.settings.queue_max:
            self.dropped += 1
            self._dropped_unwritten += 1
            return
        self._queue.append((event, time.time()))
        self._wake.set()

    # -- the writer's side ---------------------------------------------------------------------

    def _take(self) -> list[tuple[object, float]]:
        batch = list(self._queue)
        self._queue.clear()
        if self._dropped_unwritten:
            batch.append((self._dropped_unwritten, time.time()))
            self._dropped_unwritten = 0
        return batch

    async def _drain_forever(self) -> None:
        while True:
            await self._wake.wait()
            if not self._stopping:
                await asyncio.sleep(BATCH_WINDOW_S)
            self._wake.clear()
            stopping = self._stopping  # read before taking: whatever came before the stop is written
            batch = self._take()
            if batch:
                try:
                    await asyncio.to_thread(self._write_batch, batch)
                except (
                    OSError
                ) as exc:  # a full disk must not end auditing: said, counted, the next batch tries again
                    logger.error("audit log: %d records not written: %s", len(batch), exc)
                    self.dropped += len(batch)
                    self._dropped_unwritten += len(batch)
            if stopping:
                return

    def _record(self, item: object, at: float) -> dict[str, Any]:
        if isinstance(item, CallFinished):
            return call_record(item, at, self.settings.arguments)
        if isinstance(item, AdminAction):
            return admin_record(item, at)
        assert isinstance(item, int)
        return dropped_record(item)

    def _write_batch(self, batch: list[tuple[object, float]]) -> None:
        if not batch:
            return
        committed = self._state()
        try:
            self._chain_and_write(batch)
        except OSError:
            # Lines that did not reach the file never happened: the chain goes on from the last written.
            self._seq, self._prev, self._path, self._bytes, self._opened = self._written_state or committed
            raise
        finally:
            self._written_state = None

    def _state(self) -> tuple[int, str, Path | None, int, float]:
        return self._seq, self._prev, self._path, self._bytes, self._opened

    def _chain_and_write(self, batch: list[tuple[object, float]]) -> None:
        out: list[bytes] = []
        pending = 0  # bytes of `out` with their newlines, kept as lines are added (not summed per line)
        now = time.time()  # one clock read per batch: a batch spans at most a moment
        for item, at in batch:
            if self._path is None or self._due_for_rotation(pending, now):
                self._flush(out)
                out, pending = [], 0
                self._rotate()
            self._seq += 1
            line = make_line(self._seq, self._prev, self._record(item, at))
            self._prev = line_hash(line)
            out.append(line)
            pending += len(line) + 1
        self._flush(out)

    def _due_for_rotation(self, pending: int, now: float) -> bool:
        return (
            self._bytes + pending >= self.settings.max_file_bytes
            or now - self._opened >= self.settings.max_file_age
        )

    def _flush(self, out: list[bytes]) -> None:
        if not out or self._path is None:
            return
        data = b"\n".join(out) + b"\n"
        with self._path.open("ab") as handle:
            handle.write(data)
        self._bytes += len(data)
        self.written += len(out)
        self._written_state = self._state()
        Head(self._seq, self._prev).write(self.folder)

    def _rotate(self) -> None:
        self._path = self.folder / file_name(self._seq + 1)
        self._bytes, self._opened = 0, time.time()

    def _resume(self) -> None:
        """Go on from the last line written (the chain runs across restarts)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        files = log_files(self.folder)
        if not files:
            return
        last = files[-1]
        data = last.read_bytes()
        if data and not data.endswith(b"\n"):  # a line cut short by a crash: never acknowledged in HEAD
            cut = data.rfind(b"\n") + 1
            logger.warning("audit log: dropping a line cut short at the end of %s", last.name)
            with last.open("r+b") as handle:
                handle.truncate(cut)
            data = data[:cut]
        lines = data.splitlines()
        if lines:
            self._seq = int(json.loads(lines[-1])["seq"])
            self._prev = line_hash(lines[-1])
            self._path, self._bytes = last, len(data)
            self._opened = _epoch(json.loads(lines[0]).get("time"))
