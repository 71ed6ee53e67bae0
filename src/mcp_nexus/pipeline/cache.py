"""The smart cache: answers repeated calls from the store and merges identical calls in flight.

Only tools with a positive `cache_ttl` are touched (the default is 0: never cached), so an
uncached call costs one policy lookup. Error results and input requests are never stored.
A stored result that points at an offloaded file is only served while that file exists.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mcp_types as types

from mcp_nexus.pipeline.cache_key import cache_key
from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.policy import PolicyResolver
from mcp_nexus.pipeline.result_size import result_size
from mcp_nexus.stores.cache_store import CacheStore

if TYPE_CHECKING:
    from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)

CACHE_META_KEY = "nexus/cache"


@dataclass(frozen=True, slots=True)
class StoredResult:
    """A cached result and the server session that produced it (a restarted server's answers are stale)."""

    result: types.CallToolResult
    server: str | None
    ready_since: float | None


@dataclass
class CacheCounters:
    hits: int = 0
    misses: int = 0
    merged: int = 0  # calls that waited for an identical call in flight instead of calling upstream


class CacheStep:
    def __init__(
        self,
        policies: PolicyResolver,
        store: CacheStore,
        *,
        still_valid: Callable[[types.CallToolResult], bool] | None = None,
        upstreams: Mapping[str, Upstream] | None = None,
    ) -> None:
        self.policies = policies
        self.store = store
        self.still_valid = still_valid
        self.upstreams = upstreams or {}
        self.counters: dict[str, CacheCounters] = {}
        self._in_flight: dict[str, asyncio.Future[ToolOutcome]] = {}

    def _counters(self, tool: str) -> CacheCounters:
        counters = self.counters.get(tool)
        if counters is None:
            counters = self.counters[tool] = CacheCounters()
        return counters

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        policy = self.policies.resolve(call.name)
        if policy is None or policy.cache_ttl <= 0 or call.round is not None:
            return await call_next(call)
        try:
            key = cache_key(call.name, call.arguments)
        except (TypeError, ValueError):
            return await call_next(call)  # arguments JSON cannot express: never cached
        counters = self._counters(call.name)
        while True:
            cached = await self.store.get(key)
            if isinstance(cached, StoredResult) and await self._fresh(cached):
                counters.hits += 1
                call.cache = "hit"
                return _as_hit(cached.result)
            pending = self._in_flight.get(key)
            if pending is None:
                break
            try:
                outcome = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # this caller itself was cancelled
                continue  # the leader was cancelled: try again (a new leader may take over)
            if isinstance(outcome, types.CallToolResult):
                counters.merged += 1
                call.cache = "merged"
                return _as_hit(outcome)
            # An input request belongs to the leader's caller: this one asks for itself.
            return await call_next(call)
        counters.misses += 1
        call.cache = "miss"
        future: asyncio.Future[ToolOutcome] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            outcome = await call_next(call)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # marks it retrieved: no "never retrieved" warning without followers
            raise
        finally:
            self._in_flight.pop(key, None)
        future.set_result(outcome)
        if isinstance(outcome, types.CallToolResult) and not outcome.is_error:
            size = result_size(call, outcome)
            server = call.server or policy.server
            upstream = self.upstreams.get(server) if server else None
            await self.store.set(
                key,
                StoredResult(outcome, server, upstream.ready_since if upstream else None),
                ttl=policy.cache_ttl,
                size=size + len(key),
                tool=call.name,
                server=server,
            )
        return outcome

    async def _fresh(self, stored: StoredResult) -> bool:
        if self.still_valid is not None and not self.still_valid(stored.result):
            return False
        if stored.server is None or stored.server not in self.upstreams:
            return True  # the gateway's own tools
        if self.upstreams[stored.server].ready_since != stored.ready_since:
            # The server restarted (or stopped) since: everything it answered before is stale.
            await self.store.clear(server=stored.server)
            return False
        return True

    async def clear(self, tool: str | None = None) -> int:
        return await self.store.clear(tool=tool)

    async def clear_server(self, server: str) -> int:
        return await self.store.clear(server=server)


def _as_hit(result: types.CallToolResult) -> types.CallToolResult:
    """A shallow copy marked as a hit: the stored object is shared and must never be changed."""
    return result.model_copy(update={"meta": {**(result.meta or {}), CACHE_META_KEY: "hit"}})
