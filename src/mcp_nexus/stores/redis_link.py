"""One Redis server as the stores see it: a client, and whether it is up right now.

Redis is a helper, never a dependency of a call: when an operation fails (refused, timed
out, reset), the link is marked down, one warning is logged, and for `retry_after` seconds
every store on it goes local without trying (no call pays a timeout per request). The next
operation after that tries Redis again; the first one that succeeds marks it up (logged).
`status()` is what /api/stores and /api/servers show.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from mcp_nexus.config.secrets import mask_url

logger = logging.getLogger(__name__)

T = TypeVar("T")

Listener = Callable[[bool], None]
"""Told True when the link comes back up, False when it goes down."""


class RedisUnavailableError(ConnectionError):
    """Redis cannot be used right now: the caller falls back to its local store."""


class RedisLink:
    def __init__(self, url: str, *, timeout: float = 0.5, retry_after: float = 2.0) -> None:
        self.url = url
        self.timeout = timeout
        self.retry_after = retry_after
        self.client: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            health_check_interval=30,
        )
        self.up = True  # optimistic until the first failure: start-up never waits for Redis
        self.down_since: float | None = None
        self.last_error: str | None = None
        self.failures = 0  # operations that failed (each fell back to local)
        self.fallbacks = 0  # operations answered locally because the link was down
        self._retry_at = 0.0
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    @property
    def usable(self) -> bool:
        """Worth trying now: up, or down long enough that it may be back."""
        return self.up or time.monotonic() >= self._retry_at

    async def run(self, operation: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        """Run `operation` on the client; RedisUnavailableError when the link is down or it fails."""
        if not self.usable:
            self.fallbacks += 1
            raise RedisUnavailableError(self.last_error or "redis is down")
        try:
            try:
                result = await operation(self.client)
            except (RedisConnectionError, ConnectionError):
                # Pooled connections of a Redis that restarted are dead: drop them all, try once more.
                await self.client.connection_pool.disconnect()
                result = await operation(self.client)
        except (RedisError, OSError) as exc:
            self.mark_down(exc)
            self.fallbacks += 1
            raise RedisUnavailableError(str(exc)) from exc
        self.mark_up()
        return result

    def mark_down(self, exc: BaseException) -> None:
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        self._retry_at = time.monotonic() + self.retry_after
        if self.up:
            self.up = False
            self.down_since = time.time()
            logger.warning(
                "redis %s is unavailable (%s): cache and rate limits are local to this replica "
                "until it is back (retried every %g s)",
                mask_url(self.url),
                self.last_error,
                self.retry_after,
            )
            self._tell(False)

    def mark_up(self) -> None:
        if self.up:
            return
        self.up = True
        logger.warning("redis %s is back: cache and rate limits are shared again", mask_url(self.url))
        self.down_since = None
        self._tell(True)

    def _tell(self, up: bool) -> None:
        for listener in list(self._listeners):
            try:
                listener(up)
            except Exception:  # one store's bug must not stop the others hearing it
                logger.exception("redis link listener failed")

    def status(self) -> dict[str, Any]:
        return {
            "url": mask_url(self.url),
            "state": "up" if self.up else "down",
            "down_since": self.down_since,
            "last_error": self.last_error,
            "failures": self.failures,
            "local_fallbacks": self.fallbacks,
        }

    async def close(self) -> None:
        await self.client.aclose()
