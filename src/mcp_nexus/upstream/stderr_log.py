"""Pipe a child's stderr into our log, one record per line, tagged with the server's name.

A child may print its own credentials (`echo "API_TOKEN=$API_TOKEN" >&2`, a client library
logging its URL): every line goes through the redactor before it is logged or kept as the
server's last words (which reach `last_error`, `/api/servers` and `nexus servers`).

A child may also print without end (docs/SECURITY.md, "Hostile upstream servers"), so what it
costs is bounded per server (`limits:` of its entry):

- a line is logged cut to `stderr_line_chars` characters; of a longer line only that much
  (plus a margin, so a secret across the cut is still recognised) is ever held in memory;
- lines are logged through a token bucket (`stderr_burst` at once, `stderr_lines_per_second`
  on average); the rest are counted and reported as one "suppressed" line per interval while
  the flood lasts, and once when it is over (the next line logged with the bucket full again, or
  the end of the stream);
- the last `TAIL_LINES` lines are always kept (each cut to `TAIL_CHARS`), logged or not, so a
  server that dies after a flood is still reported with what it said last. Lines that are not
  logged are only counted and the tail's lines redacted when read: a flood costs the reading
  thread a `count` per chunk, not a Python step per line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections import deque
from typing import TextIO

from mcp_nexus.config.schema import UpstreamLimits
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.upstream.token_bucket import TokenBucket

logger = logging.getLogger("mcp_nexus.upstream.stderr")

TAIL_LINES = 10
"""Lines kept for error messages (the last one is a dead server's "last words")."""
TAIL_CHARS = 500
"""Characters kept of each of them."""
SECRET_MARGIN = 4096
"""Characters held past a cut, so a secret that straddles it is still found and masked."""
SUPPRESSED_REPORT_S = 10.0
"""While lines are being suppressed, how often a "suppressed N lines" line is logged."""
READ_BYTES = 65536


class StderrForwarder:
    """Owns a pipe: the write end goes to the child, a daemon thread logs what arrives."""

    def __init__(
        self,
        server_name: str,
        redactor: SecretRedactor | None = None,
        limits: UpstreamLimits | None = None,
    ) -> None:
        self.server_name = server_name
        self.redactor = redactor
        limits = limits or UpstreamLimits()
        self.line_chars = limits.stderr_line_chars
        self._bucket = TokenBucket(limits.stderr_lines_per_second, limits.stderr_burst)
        # Of one line, at most this many bytes are held (a UTF-8 character is up to 4 bytes).
        self._keep = 4 * max(self.line_chars, TAIL_CHARS) + SECRET_MARGIN
        # Both ends close-on-exec: the child gets the write end as its fd 2 (dup2 clears the
        # flag on the copy), no other child gets it. uvloop's spawn does not close inheritable
        # descriptors (close_fds), so an inheritable write end would be kept by every server
        # started meanwhile, and this one's stderr would never reach end-of-file.
        read_fd, write_fd = os.pipe()
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self.lines_seen = 0
        self.lines_logged = 0
        self.lines_suppressed = 0  # in total
        self._suppressed = 0  # since the last report
        self._suppressed_since = 0.0
        # The last lines, raw and bounded: redacted when read (`tail`, `last_words`).
        self._tail: deque[tuple[bytes, bool]] = deque(maxlen=TAIL_LINES)
        self._line = bytearray()  # the line being read, at most `_keep` bytes of it
        self._line_cut = False  # ... and more of it was dropped
        # Set (on the creating loop) once the child's stderr reached EOF and every line was logged.
        self._loop = asyncio.get_running_loop()
        self._drained = asyncio.Event()
        self._thread = threading.Thread(target=self._pump, name=f"stderr-{server_name}", daemon=True)
        self._thread.start()

    # -- the reading thread -------------------------------------------------------------------

    def _pump(self) -> None:
        with self._reader:
            while chunk := self._reader.read(READ_BYTES):
                self._feed(chunk)
            if self._line or self._line_cut:
                self._end_line()
        self._report_suppressed()
        with contextlib.suppress(RuntimeError):  # the loop may be closed at interpreter exit
            self._loop.call_soon_threadsafe(self._drained.set)

    def _feed(self, chunk: bytes) -> None:
        start, size = 0, len(chunk)
        while start < size:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._hold(chunk, start, size)
                return
            self._hold(chunk, start, end)
            self._end_line()
            start = end + 1
            if self._bucket.available() < 1:
                start = self._skim(chunk, start)

    def _skim(self, chunk: bytes, start: int) -> int:
        """No line of the rest of this chunk can be logged: count them, keep the last few; C speed."""
        last = chunk.rfind(b"\n", start)
        if last < 0:
            return start
        lines = chunk.count(b"\n", start, last + 1)
        self.lines_seen += lines
        self.lines_suppressed += lines
        if not self._suppressed:
            self._suppressed_since = time.monotonic()
        self._suppressed += lines
        for raw in chunk[start:last].rsplit(b"\n", TAIL_LINES)[-TAIL_LINES:]:
            if raw.strip():
                self._tail.append((raw[: self._keep], len(raw) > self._keep))
        if time.monotonic() - self._suppressed_since >= SUPPRESSED_REPORT_S:
            self._report_suppressed()
        return last + 1

    def _hold(self, chunk: bytes, start: int, end: int) -> None:
        room = self._keep - len(self._line)
        if end - start > room:
            self._line_cut = True
            end = start + max(room, 0)
        if end > start:
            self._line += chunk[start:end]

    def _end_line(self) -> None:
        raw, cut = bytes(self._line), self._line_cut
        self._line.clear()
        self._line_cut = False
        if not raw.strip():
            return
        self.lines_seen += 1
        self._tail.append((raw, cut))
        calm = self._bucket.available() >= self._bucket.burst  # full again: the flood, if any, is over
        if not self._bucket.take():
            if not self._suppressed:
                self._suppressed_since = time.monotonic()
            self._suppressed += 1
            self.lines_suppressed += 1
            if time.monotonic() - self._suppressed_since >= SUPPRESSED_REPORT_S:
                self._report_suppressed()
            return
        if calm or time.monotonic() - self._suppressed_since >= SUPPRESSED_REPORT_S:
            # Not at every line that passes: under a steady flood one passes per refill, and each
            # would bring a report of its own (10 a second, "not logged in the last 0 s").
            self._report_suppressed()
        self.lines_logged += 1
        text = self._shown(raw, cut, self.line_chars)
        logger.info("[%s] %s", self.server_name, text)

    def _report_suppressed(self) -> None:
        if not self._suppressed:
            return
        seconds = time.monotonic() - self._suppressed_since
        logger.warning(
            "[%s] %d stderr line(s) not logged in the last %.0f s (over %g lines/s; limits.stderr_*)",
            self.server_name,
            self._suppressed,
            seconds,
            self._bucket.rate,
        )
        self._suppressed = 0

    def _shown(self, raw: bytes, cut: bool, limit: int) -> str:
        """The line as it may be shown: redacted first, then cut (a secret cut in half would slip through)."""
        text = raw.decode("utf-8", "replace").rstrip()
        if self.redactor:
            redacted = self.redactor.redact(text)
            if cut:
                # The held part ends mid-line: its last SECRET_MARGIN characters may hold the start of
                # a secret the redactor cannot recognise. Masks shrink the text, so show nothing
                # that came from there: at most len(redacted) - SECRET_MARGIN characters.
                limit = max(0, min(limit, len(redacted) - SECRET_MARGIN))
            text = redacted
        if len(text) > limit or cut:
            return text[:limit] + " [cut]"
        return text

    # -- what the gateway reads -----------------------------------------------------------------

    @property
    def tail(self) -> list[str]:
        """The last lines the server wrote (logged or not), redacted, each at most TAIL_CHARS characters."""
        return [self._shown(raw, cut, TAIL_CHARS) for raw, cut in list(self._tail)]

    def last_words(self) -> str:
        """The last stderr line, for error messages ("" when the server said nothing)."""
        last = list(self._tail)[-1:]
        return self._shown(*last[0], TAIL_CHARS) if last else ""

    async def wait_drained(self, timeout: float) -> bool:
        """Wait until the child's stderr reached EOF (all lines logged), at most `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._drained.wait(), timeout)
        return self._drained.is_set()

    def close_parent_end(self) -> None:
        """Close our copy of the write end once the child holds its own, so EOF means the child is gone."""
        if not self.writer.closed:
            self.writer.close()
