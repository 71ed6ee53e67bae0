"""The stores of one gateway, chosen once at start from `stores:` (config/stores.py).

One object per kind, each behind its interface: the result cache (`CacheStore`), the
rate-limit windows (the `limits` limiter's calls), events between replicas (`EventBus`), the
tool-index snapshot (`IndexStore`), tool-integrity pins (`PinKeeper`), OAuth logins to upstream
servers (`TokenVault`) and the control plane's
task queue (`TaskQueue`, chosen by control/task_queues.py from `link("tasks")`: stores/ knows
nothing of the control plane).
Kinds on the same Redis URL share one `RedisLink`, so they go down and come back together.
A new kind is one method here choosing between its local and Redis implementations by
`settings.url_for(kind)`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_nexus.catalog.index_store import IndexStore
from mcp_nexus.catalog.tool_pins import PinKeeper, PinStore
from mcp_nexus.config.stores import KINDS, StoreKind, StoresSettings
from mcp_nexus.stores.cache_store import CacheStore
from mcp_nexus.stores.events import EventBus, LocalEventBus
from mcp_nexus.stores.index_location import open_index_store
from mcp_nexus.stores.index_redis import RedisIndexStore
from mcp_nexus.stores.memory_cache import MemoryCacheStore
from mcp_nexus.stores.rate_windows import SharedRateLimiter, memory_limiter
from mcp_nexus.stores.redis_cache import RedisCacheStore
from mcp_nexus.stores.redis_events import RedisEventBus
from mcp_nexus.stores.redis_link import RedisLink
from mcp_nexus.stores.redis_oauth import RedisTokenVault
from mcp_nexus.stores.redis_pins import SharedPinStore

logger = logging.getLogger(__name__)


class Stores:
    def __init__(self, settings: StoresSettings | None = None) -> None:
        self.settings = settings or StoresSettings()
        self.replica = uuid.uuid4().hex[:12]  # names this process in events and status
        self.links: dict[str, RedisLink] = {}
        self._cache: CacheStore | None = None
        self._events: EventBus | None = None
        self._pins: SharedPinStore | None = None
        # Status of kinds whose store lives in a higher layer (the task queue): name -> reader.
        self._status_parts: dict[str, Callable[[], dict[str, Any]]] = {}

    def keep_on_reload(self, new: StoresSettings) -> StoresSettings:
        """A reloaded config's `stores:` does not apply (state would be split between stores): the
        one in force is kept, with a warning when they differ."""
        if new != self.settings:
            logger.warning("config reload: stores only change when nexus serve restarts (kept as they are)")
        return self.settings

    def link(self, kind: StoreKind) -> RedisLink | None:
        """The Redis link holding `kind`, or None when it lives in memory."""
        url = self.settings.url_for(kind)
        if url == "memory":
            return None
        link = self.links.get(url)
        if link is None:
            link = self.links[url] = RedisLink(
                url, timeout=self.settings.timeout, retry_after=self.settings.retry_after
            )
        return link

    @property
    def prefix(self) -> str:
        return self.settings.key_prefix

    def cache(
        self,
        *,
        max_entries: int,
        max_bytes: int,
        encode: Callable[[Any], bytes],
        decode: Callable[[bytes], Any],
    ) -> CacheStore:
        local = MemoryCacheStore(max_entries=max_entries, max_bytes=max_bytes)
        link = self.link("cache")
        if link is None:
            self._cache = local
        else:
            self._cache = RedisCacheStore(link, prefix=self.prefix, encode=encode, decode=decode, local=local)
        return self._cache

    def rate_limiter(self) -> Any:
        """A moving-window limiter (`test`, `hit`, `get_window_stats`), shared through Redis when configured."""
        link = self.link("limits")
        return memory_limiter() if link is None else SharedRateLimiter(link, prefix=self.prefix)

    def events(self) -> EventBus:
        if self._events is None:
            link = self.link("events")
            self._events = (
                LocalEventBus(self.replica)
                if link is None
                else RedisEventBus(link, prefix=self.prefix, replica=self.replica)
            )
        return self._events

    def index_store(self, path: str | Path | None) -> IndexStore:
        """Where the tool index is saved: the local file at `path` (gateway.index.path), or one
        snapshot in Redis that every replica shares."""
        link = self.link("index")
        return open_index_store(path) if link is None else RedisIndexStore(link, prefix=self.prefix)

    def tool_pins(self, on_change: Callable[[], None]) -> PinKeeper:
        """Where tool integrity keeps its pins: the data folder's file, or Redis shared by every
        replica (with that file as its local copy); `on_change` hears another replica's changes."""
        link = self.link("pins")
        if link is None:
            return PinStore()
        self._pins = SharedPinStore(
            link, prefix=self.prefix, local=PinStore(), bus=self.events(), on_change=on_change
        )
        return self._pins

    def oauth_vault(self) -> RedisTokenVault | None:
        """Where OAuth logins live when Redis shares them between replicas; None: the data
        folder's encrypted files (upstream/oauth/vault.py, the OAuth manager's default)."""
        link = self.link("oauth")
        return None if link is None else RedisTokenVault(link, prefix=self.prefix)

    def add_status(self, name: str, part: Callable[[], dict[str, Any]]) -> None:
        """Show `part()` under `name` in /api/stores (for a store built outside this package)."""
        self._status_parts[name] = part

    async def cache_entries(self) -> int | None:
        """How many results the shared cache holds (None: the cache is local, or Redis is down)."""
        return await self._cache.entries() if isinstance(self._cache, RedisCacheStore) else None

    @property
    def degraded(self) -> bool:
        """Some Redis is down: what it shares is local to each replica for now."""
        return any(not link.up for link in self.links.values())

    async def status(self) -> dict[str, Any]:
        """For /api/stores: where each kind lives, whether Redis answers, and what it holds."""
        by_url = {url: link.status() for url, link in self.links.items()}
        status: dict[str, Any] = {
            "replica": self.replica,
            "degraded": self.degraded,
            "kinds": {
                kind: "memory" if self.settings.url_for(kind) == "memory" else "redis" for kind in KINDS
            },
            "redis": list(by_url.values()),
        }
        if self.degraded:
            status["warning"] = (
                "redis is unavailable: cache and rate limits are local to each replica until it is back"
            )
        if isinstance(self._cache, RedisCacheStore):
            status["cache_entries"] = await self.cache_entries()
        for name, part in self._status_parts.items():
            status[name] = part()
        if isinstance(self._events, RedisEventBus):
            status["events"] = {"subscribed": self._events.subscribed, "received": self._events.received}
        if self._pins is not None:
            status["pins"] = self._pins.status()
        return status

    async def start(self) -> None:
        await self.events().start()
        if self._pins is not None:  # read before the first tools are judged
            await self._pins.start()

    async def close(self) -> None:
        if self._pins is not None:
            await self._pins.close()
        if self._events is not None:
            await self._events.close()
        for link in self.links.values():
            await link.close()
