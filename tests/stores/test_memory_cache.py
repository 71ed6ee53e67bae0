"""The in-memory cache store: TTL, least-recently-used eviction by entries and by bytes, clearing."""

from __future__ import annotations

import asyncio
import time

import pytest

from mcp_nexus.stores import CacheStore, CacheStoreStats, MemoryCacheStore


async def test_memory_store_expires_and_evicts_least_recently_used() -> None:
    store = MemoryCacheStore(max_entries=2, max_bytes=100)
    assert await store.set("a", "A", ttl=60, size=10, tool="t1", server="s1")
    assert await store.set("b", "B", ttl=60, size=10, tool="t2", server="s1")
    assert await store.get("a") == "A"  # a is now the most recent
    await store.set("c", "C", ttl=60, size=10, tool="t2", server="s2")
    assert await store.get("b") is None and await store.get("a") == "A"  # b was evicted
    assert store.stats().evictions == 1
    # byte bound: a value that can never fit is refused, one that fits evicts the oldest
    assert not await store.set("huge", "H", ttl=60, size=101, tool="t", server=None)
    await store.set("d", "D", ttl=60, size=95, tool="t3", server="s2")
    assert store.stats().bytes <= 100 and await store.get("d") == "D"
    await store.set("short", "S", ttl=0.05, size=1, tool="t", server=None)
    time.sleep(0.1)
    assert await store.get("short") is None


async def test_memory_store_clears_by_tool_and_server() -> None:
    store = MemoryCacheStore()
    for key, tool, server in [("1", "a", "s1"), ("2", "b", "s1"), ("3", "b", "s2")]:
        await store.set(key, key, ttl=60, size=1, tool=tool, server=server)
    assert await store.clear(tool="b") == 2
    assert await store.clear(server="s1") == 1
    assert store.stats().entries == 0


def test_it_is_a_cache_store() -> None:
    assert isinstance(MemoryCacheStore(), CacheStore)


@pytest.mark.parametrize(("entries", "size", "field"), [(0, 10, "max_entries"), (10, 0, "max_bytes")])
def test_bounds_below_one_are_refused_naming_the_bound(entries: int, size: int, field: str) -> None:
    with pytest.raises(ValueError, match=f"{field} must be at least 1"):
        MemoryCacheStore(max_entries=entries, max_bytes=size)


async def test_an_expired_entry_is_dropped_when_met_and_frees_its_bytes() -> None:
    store = MemoryCacheStore()
    await store.set("short", "S", ttl=0.05, size=40, tool="t", server=None)
    await store.set("long", "L", ttl=60, size=2, tool="t", server=None)
    assert store.stats() == CacheStoreStats(entries=2, bytes=42, evictions=0)
    await asyncio.sleep(0.1)
    assert await store.get("short") is None
    assert await store.get("long") == "L"
    assert store.stats() == CacheStoreStats(entries=1, bytes=2, evictions=0)  # an expiry is no eviction


@pytest.mark.parametrize("ttl", [0, -1])
async def test_a_ttl_that_is_not_positive_stores_nothing(ttl: float) -> None:
    store = MemoryCacheStore()
    assert not await store.set("k", "v", ttl=ttl, size=1, tool="t", server=None)
    assert await store.get("k") is None and store.stats().entries == 0


async def test_setting_a_key_again_replaces_it_and_makes_it_the_most_recent() -> None:
    store = MemoryCacheStore(max_entries=2)
    await store.set("a", "old", ttl=60, size=30, tool="t", server=None)
    await store.set("b", "B", ttl=60, size=1, tool="t", server=None)
    await store.set("a", "new", ttl=60, size=5, tool="t", server=None)  # a is now newer than b
    assert store.stats() == CacheStoreStats(entries=2, bytes=6, evictions=0)  # the old size is gone
    await store.set("c", "C", ttl=60, size=1, tool="t", server=None)
    assert await store.get("b") is None  # the least recently used went
    assert await store.get("a") == "new" and await store.get("c") == "C"


async def test_the_byte_bound_evicts_oldest_first_until_the_new_value_fits() -> None:
    store = MemoryCacheStore(max_entries=100, max_bytes=100)
    for key in ("a", "b", "c", "d"):
        await store.set(key, key, ttl=60, size=25, tool="t", server=None)
    assert await store.get("a") == "a"  # order of use now: b, c, d, a
    await store.set("big", "B", ttl=60, size=60, tool="t", server=None)
    assert [k for k in ("a", "b", "c", "d", "big") if await store.get(k) is not None] == ["a", "big"]
    assert store.stats() == CacheStoreStats(entries=2, bytes=85, evictions=3)


async def test_a_value_larger_than_the_whole_store_is_refused_without_evicting_anything() -> None:
    store = MemoryCacheStore(max_bytes=100)
    await store.set("keep", "K", ttl=60, size=90, tool="t", server=None)
    assert not await store.set("huge", "H", ttl=60, size=101, tool="t", server=None)
    assert await store.get("keep") == "K" and store.stats().evictions == 0


async def test_clear_by_tool_and_server_together_takes_only_their_intersection() -> None:
    store = MemoryCacheStore()
    for key, tool, server in [("1", "a", "s1"), ("2", "a", "s2"), ("3", "b", "s1"), ("4", "b", None)]:
        await store.set(key, key, ttl=60, size=10, tool=tool, server=server)
    assert await store.clear(tool="a", server="s1") == 1
    assert await store.get("1") is None and await store.get("2") == "2"
    assert await store.clear(server="nowhere") == 0
    assert await store.clear() == 3  # everything
    assert store.stats() == CacheStoreStats(entries=0, bytes=0, evictions=0)
