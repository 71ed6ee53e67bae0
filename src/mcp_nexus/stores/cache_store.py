"""The interface every result-cache store implements: one process's memory, or Redis shared by replicas."""

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

    `shared` stores are seen by several replicas: what only one process knows (e.g. when its
    own upstream session started) must not go into their values. `claim`/`release` make one
    replica compute a missing value while the others wait for it (single flight).
    """

    shared: bool

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

    async def claim(self, key: str, ttl: float) -> bool:
        """True: the caller computes `key` now (others wait up to `ttl` s); False: someone else is."""
        ...

    async def release(self, key: str) -> None:
        """Give up a claim (the value was stored, or will not be)."""
        ...

    def stats(self) -> CacheStoreStats: ...
