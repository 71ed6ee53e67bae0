"""Keeping one outgoing WebSocket alive: one socket at a time, exponential backoff with jitter between tries.

The backoff resets after a successful session (a popular bridge forgets this and ends up
waiting a minute after every short outage). A refused token (close 1008, HTTP 401/403)
waits the maximum at once: retrying a bad token faster only hammers the endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import InvalidStatus, InvalidURI

from mcp_nexus.config.secrets import redact
from mcp_nexus.config.xiaozhi import Reconnect
from mcp_nexus.frontends.xiaozhi.status import LinkStatus

CLOSE_POLICY_VIOLATION = 1008  # what self-hosted endpoints send for a missing or bad token
CLOSE_XIAOZHI_4004 = 4004
_REFUSED_HTTP = (401, 403)


class Backoff:
    def __init__(self, settings: Reconnect, rng: Callable[[], float] = random.random) -> None:
        self.settings = settings
        self.rng = rng
        self.failures = 0

    def _with_jitter(self, base: float) -> float:
        return base * (1 + self.settings.backoff_jitter * self.rng())

    def next_delay(self) -> float:
        base = min(self.settings.backoff_max, self.settings.backoff_min * 2**self.failures)
        self.failures += 1
        return self._with_jitter(base)

    def max_delay(self) -> float:
        self.failures += 1
        return self._with_jitter(self.settings.backoff_max)

    def reset(self) -> None:
        self.failures = 0


@dataclass
class SessionEnd:
    """How one connection ended."""

    established: bool  # the handshake completed: the backoff starts over
    code: int | None = None
    reason: str = ""
    error: str | None = None  # our own reason to end it (hello timeout, idle, ...)


class SessionRefused(Exception):
    """The peer refused us before any session (e.g. no hello, bad hello); message is safe to show."""


Attempt = Callable[[], Awaitable[SessionEnd]]


class ReconnectLoop:
    """Runs `attempt` until stopped; `attempt` opens one socket and returns when it is closed."""

    def __init__(
        self,
        status: LinkStatus,
        settings: Reconnect,
        attempt: Attempt,
        logger: logging.Logger,
        secrets: list[str],
    ) -> None:
        self.status = status
        self.backoff = Backoff(settings)
        self.attempt = attempt
        self.logger = logger
        self.secrets = secrets
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        label = self.status.url
        while not self._stop.is_set():
            self.status.attempts += 1
            refused = False
            try:
                end = await self.attempt()
            except InvalidStatus as exc:
                code = exc.response.status_code
                refused = code in _REFUSED_HTTP
                end = SessionEnd(False, error=f"handshake refused with HTTP {code}")
            except InvalidURI:
                end = SessionEnd(False, error="the URL is not a valid WebSocket URL")
            except SessionRefused as exc:
                end = SessionEnd(False, error=str(exc))
            except (OSError, TimeoutError) as exc:
                end = SessionEnd(False, error=f"cannot connect: {exc or type(exc).__name__}")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug must not end the link for good: log it and try again
                self.logger.exception("%s: unexpected failure", label)
                end = SessionEnd(False, error=f"unexpected failure: {type(exc).__name__}: {exc}")
            if self._stop.is_set():
                return
            if end.established:
                self.backoff.reset()
            if end.code == CLOSE_POLICY_VIOLATION:
                refused = True
            delay = self.backoff.max_delay() if refused else self.backoff.next_delay()
            self._report(end, refused, delay)
            self.status.next_retry_at = time.time() + delay
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            self.status.next_retry_at = None

    def _report(self, end: SessionEnd, refused: bool, delay: float) -> None:
        label = self.status.url
        reason = redact(end.reason or "", self.secrets)
        retry = f"retrying in {delay:.1f} s"
        if end.error is not None:
            self.status.last_error = redact(end.error, self.secrets)
        if end.code == CLOSE_POLICY_VIOLATION:
            self.status.last_error = (
                f"closed with 1008 (policy violation: bad or missing token?) {reason}".strip()
            )
            self.logger.error(
                "%s: closed with 1008 %r: the endpoint refused the token; check it. Backing off to the maximum, %s",
                label,
                reason,
                retry,
            )
        elif end.code == CLOSE_XIAOZHI_4004:
            self.status.last_error = f"closed with 4004 {reason}".strip()
            self.logger.error(
                "%s: closed with 4004 %r: the endpoint ended the session (it does so when the MCP handshake "
                "is not answered within ~10 s, or when it drops the agent's tool channel); %s",
                label,
                reason,
                retry,
            )
        elif refused:
            self.logger.error(
                "%s: %s: check the token; backing off to the maximum, %s",
                label,
                self.status.last_error,
                retry,
            )
        elif end.error is not None:
            self.logger.warning("%s: %s; %s", label, self.status.last_error, retry)
        else:
            self.logger.info("%s: connection closed (code %s %r); %s", label, end.code, reason, retry)


class DialingLink:
    """A link that dials out and redials on loss: `start` runs its ReconnectLoop, `stop` ends it.

    Subclasses set `status`, `_loop`, `_ws` (the live socket or None), `_task = None` and
    `_label` (the task's name) in their constructor.
    """

    status: LinkStatus
    _loop: ReconnectLoop
    _ws: Any
    _task: asyncio.Task[None] | None
    _label: str

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop.run(), name=f"{self._label} {self.status.url}")

    async def stop(self) -> None:
        self._loop.stop()
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close(1001, "nexus stopping")
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
