"""Rate-limit windows: the `limits` library's moving window, in memory or in Redis shared by replicas.

In Redis (`limits`' own storage, redis-py underneath) a "5/second" limit holds for all
replicas together. While the link is down the windows are this replica's own (a warning in
the log and in /api/stores says so): calls go on being limited, per replica, instead of
failing or going unlimited.
"""

from __future__ import annotations

from typing import Any

from limits import RateLimitItem
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string

from mcp_nexus.stores.redis_link import RedisLink


def memory_limiter() -> MovingWindowRateLimiter:
    storage: Any = storage_from_string("async+memory://")
    return MovingWindowRateLimiter(storage)


class SharedRateLimiter:
    """The moving-window limiter's three calls, on Redis while it answers, else on local windows."""

    def __init__(self, link: RedisLink, *, prefix: str) -> None:
        self.link = link
        storage: Any = storage_from_string(
            "async+" + link.url,
            implementation="redispy",
            key_prefix=f"{prefix}:limits",
            socket_timeout=link.timeout,
            socket_connect_timeout=link.timeout,
        )
        self.shared = MovingWindowRateLimiter(storage)
        self.local = memory_limiter()

    async def _run(self, method: str, *args: Any) -> Any:
        if self.link.usable:
            try:
                try:
                    result = await getattr(self.shared, method)(*args)
                except Exception:  # e.g. a pooled connection of a Redis that restarted: once more
                    result = await getattr(self.shared, method)(*args)
            except Exception as exc:  # limits wraps or passes on the client's errors: any means "not now"
                self.link.mark_down(exc)
            else:
                self.link.mark_up()
                return result
        self.link.fallbacks += 1
        return await getattr(self.local, method)(*args)

    async def test(self, item: RateLimitItem, *identifiers: str) -> bool:
        return bool(await self._run("test", item, *identifiers))

    async def hit(self, item: RateLimitItem, *identifiers: str) -> bool:
        return bool(await self._run("hit", item, *identifiers))

    async def get_window_stats(self, item: RateLimitItem, *identifiers: str) -> Any:
        return await self._run("get_window_stats", item, *identifiers)
