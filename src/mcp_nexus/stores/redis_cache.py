"""The result cache in Redis, shared by every replica; this process's memory while Redis is down.

Keys (`P` is `stores.key_prefix`):
    P:cache:v:<key>          the encoded value, with Redis's own TTL (PX)
    P:cache:lock:<key>       the single-flight claim: one replica computes, the others wait
    P:cache:tool:<tool>      set of keys per tool, and P:cache:server:<server> per server, to clear by either

Values are bytes made by the caller's codec (JSON, never pickle: whoever can write to Redis
must not be able to run code in the gateway). Redis bounds its own memory (`maxmemory` with
an eviction policy); `max_bytes` here only refuses single values too big to share.

While the link is down every operation goes to a local `MemoryCacheStore` (so calls still
hit a cache, one replica's); when it comes back that local store is emptied, as entries
cleared in Redis meanwhile may linger there.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis

from mcp_nexus.stores.cache_store import CacheStoreStats
from mcp_nexus.stores.memory_cache import MemoryCacheStore
from mcp_nexus.stores.redis_link import RedisLink, RedisUnavailableError

logger = logging.getLogger(__name__)

_CLEAR_BATCH = 500

# Delete the claim only when it is still ours (it may have expired and been taken by another replica).
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisCacheStore:
    shared = True

    def __init__(
        self,
        link: RedisLink,
        *,
        prefix: str,
        encode: Callable[[Any], bytes],
        decode: Callable[[bytes], Any],
        local: MemoryCacheStore,
    ) -> None:
        self.link = link
        self.prefix = f"{prefix}:cache"
        self.encode = encode
        self.decode = decode
        self.local = local
        self.owner = uuid.uuid4().hex  # this process's claims carry it
        self._release = link.client.register_script(_RELEASE)
        link.add_listener(self._on_link)

    def _on_link(self, up: bool) -> None:
        if up:
            # Shared again: whatever this replica cached alone may have been cleared elsewhere.
            self.local = MemoryCacheStore(max_entries=self.local.max_entries, max_bytes=self.local.max_bytes)

    def _value(self, key: str) -> str:
        return f"{self.prefix}:v:{key}"

    async def get(self, key: str) -> Any | None:
        try:
            data: bytes | str | None = await self.link.run(lambda r: r.get(self._value(key)))
        except RedisUnavailableError:
            return await self.local.get(key)
        if data is None:
            return None
        try:
            return self.decode(data.encode() if isinstance(data, str) else data)
        except (ValueError, TypeError) as exc:  # written by another version, or damaged: a miss
            logger.warning("dropping an unreadable cache entry: %s", exc)
            return None

    async def set(
        self, key: str, value: Any, *, ttl: float, size: int, tool: str, server: str | None
    ) -> bool:
        if ttl <= 0 or size > self.local.max_bytes:
            return False
        data = self.encode(value)
        ms = max(1, int(ttl * 1000))
        tags = [f"{self.prefix}:tool:{tool}"] + ([f"{self.prefix}:server:{server}"] if server else [])

        async def store(r: aioredis.Redis) -> None:
            pipe = r.pipeline(transaction=False)
            pipe.set(self._value(key), data, px=ms)
            for tag in tags:
                pipe.sadd(tag, key)
                # The tag set lives as long as its longest-lived member (NX: first TTL, GT: only longer).
                pipe.pexpire(tag, ms, nx=True)
                pipe.pexpire(tag, ms, gt=True)
            await pipe.execute()

        try:
            await self.link.run(store)
        except RedisUnavailableError:
            return await self.local.set(key, value, ttl=ttl, size=size, tool=tool, server=server)
        return True

    async def clear(self, *, tool: str | None = None, server: str | None = None) -> int:
        cleared = await self.local.clear(tool=tool, server=server)
        try:
            return await self.link.run(lambda r: self._clear(r, tool, server))
        except RedisUnavailableError:
            return cleared

    async def _clear(self, r: aioredis.Redis, tool: str | None, server: str | None) -> int:
        if tool is None and server is None:
            count = 0
            batch: list[str] = []
            async for name in r.scan_iter(match=f"{self.prefix}:*", count=_CLEAR_BATCH):
                text = name.decode() if isinstance(name, bytes) else name
                count += text.startswith(f"{self.prefix}:v:")
                batch.append(text)
                if len(batch) >= _CLEAR_BATCH:
                    await r.unlink(*batch)
                    batch = []
            if batch:
                await r.unlink(*batch)
            return count
        tags = [f"{self.prefix}:tool:{tool}"] if tool is not None else []
        tags += [f"{self.prefix}:server:{server}"] if server is not None else []
        members = await (r.sinter(tags) if len(tags) > 1 else r.smembers(tags[0]))
        keys = [m.decode() if isinstance(m, bytes) else m for m in members]
        if not keys:
            return 0
        pipe = r.pipeline(transaction=False)
        pipe.unlink(*[self._value(k) for k in keys])
        for tag in tags:
            pipe.srem(tag, *keys)
        removed = await pipe.execute()
        return int(removed[0])

    async def claim(self, key: str, ttl: float) -> bool:
        try:
            claimed = await self.link.run(
                lambda r: r.set(f"{self.prefix}:lock:{key}", self.owner, nx=True, px=max(1, int(ttl * 1000)))
            )
        except RedisUnavailableError:
            return True  # alone for now: the cache step still merges this replica's identical calls
        return bool(claimed)

    async def release(self, key: str) -> None:
        try:
            await self.link.run(
                lambda r: self._release(keys=[f"{self.prefix}:lock:{key}"], args=[self.owner])
            )
        except RedisUnavailableError:
            return  # the claim expires by itself

    async def entries(self) -> int | None:
        """How many results Redis holds now (None while it is down): for /api/stores."""
        try:
            return await self.link.run(self._count)
        except RedisUnavailableError:
            return None

    async def _count(self, r: aioredis.Redis) -> int:
        count = 0
        async for _name in r.scan_iter(match=f"{self.prefix}:v:*", count=_CLEAR_BATCH):
            count += 1
        return count

    def stats(self) -> CacheStoreStats:
        """What this replica holds by itself (only while Redis is down); `entries()` counts Redis."""
        return self.local.stats()
