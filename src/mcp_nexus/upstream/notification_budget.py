"""What a stdio server sends unasked costs the gateway a bounded share of a core.

A server may write notifications (and requests of its own, and lines that are not JSON) as
fast as its pipe takes them: the gateway parsed every one at once and spent about a core on a
server that never stopped (docs/SECURITY.md, "Hostile upstream servers"). Each stdio server
has a token bucket for them (`limits.notification_burst` at once, then
`limits.notifications_per_second` on average). Beyond it the gateway stops reading that
server's stdout (the pipe transport's `pause_reading`) until the average is back within the
budget: the server blocks on its full pipe, its own answers wait behind its flood, and no
other server is touched. What was read in the same chunk is still handled (a debt the pause
repays), so the average holds whatever the chunk size.

Answers to the gateway's own requests are never counted: a server answering thousands of
calls a second is doing its job. A message costs one token, plus one per 4 KiB it holds (the
parsing costs by the byte). One warning per flood (an "episode": from the first pause
until the bucket has filled up again) names the server and how many messages it sent; its end
is logged with how many were read late and how long reading was paused.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger(__name__)

BYTES_PER_TOKEN = 4096
"""A large message costs one token more per this many bytes: parsing costs by the byte, so a
server sending fewer but larger messages (a batch array, megabyte log records) is bounded too."""


class PausableSource(Protocol):
    """Where the messages come from: a reading that can stop and go on (a `LineSplitter`)."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


class NotificationBudget:
    """`burst` unasked messages at once, `rate` a second on average; beyond, `source` is paused."""

    def __init__(
        self,
        server: str,
        rate: float,
        burst: int,
        source: PausableSource,
        clock: Callable[[], float] = time.monotonic,
        answers: str = "its answers wait behind them",
    ) -> None:
        if not rate > 0:
            raise ValueError(f"server {server!r}: notifications_per_second must be above 0, not {rate!r}")
        if burst < 1:
            raise ValueError(f"server {server!r}: notification_burst must be at least 1, not {burst!r}")
        self.server = server
        self.rate = float(rate)
        self.burst = float(burst)
        self._source = source
        self._clock = clock
        self._answers = answers  # what the warning says of the server's answers meanwhile
        self._loop = asyncio.get_running_loop()
        now = clock()
        self._tokens = self.burst
        self._at = now
        self._timer: asyncio.Handle | None = None
        self.paused = False
        self._released = False
        # Over the session's life.
        self.episodes = 0
        self.delayed = 0  # messages read after a pause of their server's reading had begun
        self.paused_seconds = 0.0
        # The current count: since the bucket was last full (the episode, once one began).
        self._since = now
        self._last = now
        self._count = 0
        self._flooding = False
        self._episode_delayed = 0
        self._episode_paused = 0.0
        self._paused_at = now

    def spend(self, size: int = 0) -> None:
        """One unasked message of `size` bytes was read: one token, plus one per `BYTES_PER_TOKEN`."""
        if self._released:
            return
        now = self._clock()
        tokens = self._level(now)
        self._at = now
        if tokens >= self.burst:  # full again: a count starts here (a flood on until now is over)
            if self._flooding:
                self._end_episode()
            self._since, self._count = now, 0
        self._tokens = tokens - 1 - size // BYTES_PER_TOKEN
        self._count += 1
        self._last = now
        if self._flooding:
            self._episode_delayed += 1
            self.delayed += 1
        if self._tokens < 0 and not self.paused:
            self._pause(now)

    def close(self) -> None:
        """No more timers (the session ends; the source goes with it)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def release(self) -> None:
        """The server is being stopped: read it freely again, so that it can write out what it
        holds and exit when its stdin closes (blocked on a full pipe, it would wait for SIGTERM)."""
        self.close()
        self._released = True
        if self.paused:
            self.paused = False
            self._source.resume_reading()

    def _level(self, now: float) -> float:
        return min(self.burst, self._tokens + (now - self._at) * self.rate)

    def _pause(self, now: float) -> None:
        self.paused = True
        self._paused_at = now
        self._source.pause_reading()
        if not self._flooding:
            self._flooding = True
            self.episodes += 1
            logger.warning(
                "server %s sent %d notifications in %.1f s, over its budget (%g a second, %d at once): "
                "its output is read no faster until it calms down; %s",
                self.server,
                self._count,
                now - self._since,
                self.rate,
                self.burst,
                self._answers,
            )
        # Planned once the chunk being read now is handled: what it still holds adds to the debt.
        self.close()
        self._timer = self._loop.call_soon(self._plan_resume)

    def _plan_resume(self) -> None:
        debt = -self._level(self._clock())
        self._timer = self._loop.call_later(max(0.0, debt / self.rate), self._resume)

    def _resume(self) -> None:
        now = self._clock()
        self.paused = False
        self.paused_seconds += now - self._paused_at
        self._episode_paused += now - self._paused_at
        self._source.resume_reading()
        self._timer = self._loop.call_later((self.burst - self._level(now)) / self.rate, self._check_end)

    def _check_end(self) -> None:
        """A server that went quiet ends its flood too (no message arrives to notice it)."""
        self._timer = None
        if self.paused or not self._flooding:
            return
        level = self._level(self._clock())
        if level >= self.burst:
            self._end_episode()
        else:
            self._timer = self._loop.call_later((self.burst - level) / self.rate, self._check_end)

    def _end_episode(self) -> None:
        logger.info(
            "server %s: its notification flood is over: %d notifications in %.1f s, %d of them read "
            "late (its output not read for %.1f s in all)",
            self.server,
            self._count,
            self._last - self._since,
            self._episode_delayed,
            self._episode_paused,
        )
        self._flooding = False
        self._episode_delayed = 0
        self._episode_paused = 0.0
