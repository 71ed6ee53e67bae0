"""The default cache store: one process's memory, least recently used first out, bounded twice."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from mcp_nexus.stores.cache_store import CacheStoreStats


@dataclass(slots=True)
class _Entry:
    value: Any
    size: int
    expires_at: float  # time.monotonic() deadline
    tool: str
    server: str | None


class MemoryCacheStore:
    """Bounded by entry count and by total bytes; expired entries are dropped when met."""

    shared = False

    def __init__(self, *, max_entries: int = 1000, max_bytes: int = 64 * 1024 * 1024) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._evictions = 0

    async def get(self, key: str) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= time.monotonic():
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry.value

    async def set(
        self, key: str, value: Any, *, ttl: float, size: int, tool: str, server: str | None
    ) -> bool:
        if ttl <= 0 or size > self.max_bytes:
            return False
        if key in self._entries:
            self._drop(key)
        self._entries[key] = _Entry(value, size, time.monotonic() + ttl, tool, server)
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            oldest = next(iter(self._entries))
            self._drop(oldest)
            self._evictions += 1
        return True

    async def clear(self, *, tool: str | None = None, server: str | None = None) -> int:
        if tool is None and server is None:
            count = len(self._entries)
            self._entries.clear()
            self._bytes = 0
            return count
        doomed = [
            key
            for key, entry in self._entries.items()
            if (tool is None or entry.tool == tool) and (server is None or entry.server == server)
        ]
        for key in doomed:
            self._drop(key)
        return len(doomed)

    async def claim(self, key: str, ttl: float) -> bool:
        return True  # one process: the cache step's own in-flight table already merges identical calls

    async def release(self, key: str) -> None:
        return None

    def stats(self) -> CacheStoreStats:
        return CacheStoreStats(len(self._entries), self._bytes, self._evictions)

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.size
