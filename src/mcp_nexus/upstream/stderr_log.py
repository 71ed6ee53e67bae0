"""Pipe a child's stderr into our log, one record per line, tagged with the server's name.

A child may print its own credentials (`echo "API_TOKEN=$API_TOKEN" >&2`, a client library
logging its URL): every line goes through the redactor before it is logged or kept as the
server's last words (which reach `last_error`, `/api/servers` and `nexus servers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import deque
from typing import TextIO

from mcp_nexus.config.secrets import SecretRedactor

logger = logging.getLogger("mcp_nexus.upstream.stderr")


class StderrForwarder:
    """Owns a pipe: the write end goes to the child, a daemon thread logs what arrives."""

    def __init__(self, server_name: str, redactor: SecretRedactor | None = None) -> None:
        self.server_name = server_name
        self.redactor = redactor
        read_fd, write_fd = os.pipe()
        os.set_inheritable(write_fd, True)
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self.lines_seen = 0
        # The last lines, so a server that dies can be reported with what it said before dying.
        self.tail: deque[str] = deque(maxlen=5)
        # Set (on the creating loop) once the child's stderr reached EOF and every line was logged.
        self._loop = asyncio.get_running_loop()
        self._drained = asyncio.Event()
        self._thread = threading.Thread(target=self._pump, name=f"stderr-{server_name}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        buffer = b""
        with self._reader:
            while chunk := self._reader.read(8192):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._emit(line)
            if buffer:
                self._emit(buffer)
        with contextlib.suppress(RuntimeError):  # the loop may be closed at interpreter exit
            self._loop.call_soon_threadsafe(self._drained.set)

    def _emit(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip()
        if text and self.redactor is not None:
            text = self.redactor.redact(text)  # before any cut: a secret cut in half would slip through
        if text:
            self.lines_seen += 1
            self.tail.append(text[:500])
            logger.info("[%s] %s", self.server_name, text[:4000])

    def last_words(self) -> str:
        """The last stderr line, for error messages ("" when the server said nothing)."""
        return self.tail[-1] if self.tail else ""

    async def wait_drained(self, timeout: float) -> bool:
        """Wait until the child's stderr reached EOF (all lines logged), at most `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._drained.wait(), timeout)
        return self._drained.is_set()

    def close_parent_end(self) -> None:
        """Close our copy of the write end once the child holds its own, so EOF means the child is gone."""
        if not self.writer.closed:
            self.writer.close()
