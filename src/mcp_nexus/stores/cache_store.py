"""The interface every result-cache store implements (memory now; Redis drops in later)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class CacheStoreStats:
    entries: int
    bytes: int
    evictions: int  # entries dropped to stay within the bounds (not expiries)


@runtime_checkable
class CacheStore(Protocol):
    """Keyed values with a TTL, tagged with their tool and server so they can be cleared by either.

    `size` is the caller's measure of the value in bytes: the store bounds its memory with it
    and never serialises the value itself (a shared store may, and must then copy on read).
    """

    async def get(self, key: str) -> Any | None:
        """The live value under `key`, or None when absent or expired."""
        ...

    async def set(
        self, key: str, value: Any, *, ttl: float, size: int, tool: str, server: str | None
    ) -> bool:
        """Store `value` for `ttl` seconds; False when it can never fit the bounds."""
        ...

    async def clear(self, *, tool: str | None = None, server: str | None = None) -> int:
        """Drop the entries of `tool` and/or `server` (every entry when both are None); returns how many."""
        ...

    def stats(self) -> CacheStoreStats: ...
