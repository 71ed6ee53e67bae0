"""A server's log records (`notifications/message`) in the gateway's own log, bounded per server.

A server may send log records without end (docs/SECURITY.md, "Hostile upstream servers"), and
each was one INFO line of whatever length it sent. They are now logged as its stderr lines are
(stderr_log.py), under the same `limits:` of its entry, in a bucket of their own: each record on
one line, the server's secrets masked, cut to `stderr_line_chars` characters; `stderr_burst` at once
and `stderr_lines_per_second` on average; the rest are counted and said in one warning per
episode: every SUPPRESSED_REPORT_S while it lasts, and once it is over (the bucket full again,
or no record for SUPPRESSED_REPORT_S).

Only the gateway's log is bounded here. The record still goes on to the caller whose call is in
flight on that server (relay.py): that caller asked for it, and a stdio server's messages are
already read no faster than its notification budget (notification_budget.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from mcp_nexus.config.schema import ServerConfig, UpstreamLimits
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.upstream.stderr_log import SUPPRESSED_REPORT_S
from mcp_nexus.upstream.token_bucket import TokenBucket

logger = logging.getLogger("mcp_nexus.upstream.log")


class ServerLogRecords:
    def __init__(
        self, server: str, config: Callable[[], ServerConfig], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.server = server
        self._config = config  # read per record: a reload may change the limits and the secrets
        self._redactor: tuple[ServerConfig, SecretRedactor] | None = None
        self._clock = clock
        self._bucket: TokenBucket | None = None
        self.seen = 0
        self.logged = 0
        self.suppressed = 0  # in total
        self._unsaid = 0  # suppressed since the last warning
        self._since = 0.0
        self._report: asyncio.TimerHandle | None = None

    def log(self, level: str, data: Any) -> None:
        """Log one record the server sent, or count it when the server is over its rate."""
        config = self._config()
        limits = config.limits
        self.seen += 1
        bucket = self._bucket_for(limits)
        calm = bucket.available() >= bucket.burst  # full again: the flood, if any, is over
        if not bucket.take():
            self.suppressed += 1
            if not self._unsaid:
                self._since = self._clock()
                self._report_later()
            self._unsaid += 1
            if self._clock() - self._since >= SUPPRESSED_REPORT_S:
                self.report_suppressed()
            return
        if calm or self._clock() - self._since >= SUPPRESSED_REPORT_S:
            # Not at every record that passes: under a steady flood one passes per refill, and
            # each would bring a warning of its own (10 a second, "not logged in the last 0 s").
            self.report_suppressed()
        self.logged += 1
        text = self._redactor_for(config).redact(one_line(data))  # masked whole, then cut
        logger.info("[%s] log %s: %s", self.server, level, cut(text, limits.stderr_line_chars))

    def report_suppressed(self) -> None:
        """Say how many records were not logged since the last time it was said (if any)."""
        if self._report is not None:
            self._report.cancel()
            self._report = None
        if not self._unsaid:
            return
        logger.warning(
            "[%s] %d log record(s) not logged in the last %.0f s (over %g a second; limits.stderr_*)",
            self.server,
            self._unsaid,
            self._clock() - self._since,
            self._config().limits.stderr_lines_per_second,
        )
        self._unsaid = 0

    def _report_later(self) -> None:
        # A flood that stops is still reported, without waiting for the server's next record.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._report = loop.call_later(SUPPRESSED_REPORT_S, self.report_suppressed)

    def _redactor_for(self, config: ServerConfig) -> SecretRedactor:
        if self._redactor is None or self._redactor[0] is not config:
            self._redactor = (config, SecretRedactor.for_server(config))
        return self._redactor[1]

    def _bucket_for(self, limits: UpstreamLimits) -> TokenBucket:
        rate, burst = limits.stderr_lines_per_second, limits.stderr_burst
        bucket = self._bucket
        if bucket is None or (bucket.rate, bucket.burst) != (rate, burst):  # new, or a reload changed them
            bucket = self._bucket = TokenBucket(rate, burst, self._clock)
        return bucket


def one_line(data: Any) -> str:
    """A record's data as one line: text as it is, anything else as JSON; line breaks escaped,
    so a record cannot forge lines of the gateway's log."""
    text = data if isinstance(data, str) else json.dumps(data, default=str, ensure_ascii=False)
    if not text.isascii():
        # A lone surrogate (valid JSON, not Unicode) would fail a UTF-8 log file's write: escaped.
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\r", "\\r").replace("\n", "\\n")


def cut(text: str, limit: int) -> str:
    if len(text) > limit:
        return text[:limit] + f" [cut: {len(text)} characters]"
    return text
