"""Pluggable shared state: the cache store interface and its in-memory implementation."""

from mcp_nexus.stores.cache_store import CacheStore, CacheStoreStats
from mcp_nexus.stores.memory_cache import MemoryCacheStore

__all__ = ["CacheStore", "CacheStoreStats", "MemoryCacheStore"]
