"""The smart cache: answers repeated calls from the store and merges identical calls in flight.

Only tools with a positive `cache_ttl` are touched (the default is 0: never cached), so an
uncached call costs one policy lookup. Error results and input requests are never stored.
A stored result that points at an offloaded file is only served while that file exists.

Private results (policy `cache_scope: private`; by default a call made by a user, a caller with
an access token, or one that carries the caller's own credentials upstream) are keyed by caller:
one caller's answer is never another's hit. `cache_scope: public` declares a tool's results
shareable between users.

With a shared store (Redis, several replicas) a miss is claimed first: one replica calls the
upstream, the others wait for its stored answer (`lock_ttl` at most), so N replicas asking at
once make one upstream call, like identical calls inside one process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
import orjson

from mcp_nexus.pipeline.cache_key import cache_key
from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.pipeline.policy import PolicyResolver, ToolPolicy, call_policy
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


def encode_stored(stored: StoredResult) -> bytes:
    """JSON for a shared store (never pickle: writing to Redis must not mean running code here)."""
    return orjson.dumps(
        {
            "result": stored.result.model_dump(mode="json", by_alias=True, exclude_none=True),
            "server": stored.server,
            "ready_since": stored.ready_since,
        }
    )


def decode_stored(data: bytes) -> StoredResult:
    """Raises ValueError for data that is not a stored result."""
    try:
        raw: Any = orjson.loads(data)
        result = types.CallToolResult.model_validate(raw["result"])
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"not a stored result: {exc}") from exc
    return StoredResult(result, raw.get("server"), raw.get("ready_since"))


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
        lock_ttl: float = 10.0,
    ) -> None:
        self.policies = policies
        self.lock_ttl = lock_ttl  # seconds another replica's claim on a missing result is waited for
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

    def applies_to(self, policy: ToolPolicy) -> bool:
        """Only a tool with a TTL is ever cached (the pipeline leaves this step out for the others)."""
        return policy.cache_ttl > 0

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        policy = call_policy(call, self.policies)
        if policy is None or policy.cache_ttl <= 0 or call.round is not None:
            return await call_next(call)
        try:
            key = cache_key(call.name, call.arguments, _scope(policy.cache_scope, call))
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
        future: asyncio.Future[ToolOutcome] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        claimed = False
        try:
            if self.store.shared:
                claimed, answered = await self._claim_or_wait(key)
                if answered is not None:  # another replica called the upstream for this one
                    counters.merged += 1
                    call.cache = "merged"
                    future.set_result(answered.result)
                    return _as_hit(answered.result)
            counters.misses += 1
            call.cache = "miss"
            try:
                outcome = await call_next(call)
            except asyncio.CancelledError:
                future.cancel()
                raise
            except BaseException as exc:
                future.set_exception(exc)
                future.exception()  # marks it retrieved: no "never retrieved" warning without followers
                raise
            future.set_result(outcome)
            if isinstance(outcome, types.CallToolResult) and not outcome.is_error:
                size = result_size(call, outcome)
                server = call.server or policy.server
                upstream = self.upstreams.get(server) if server else None
                # When this session started means nothing to another replica: shared entries go
                # stale by clearing (a replica whose upstream restarts clears that server's).
                ready = upstream.ready_since if upstream and not self.store.shared else None
                await self.store.set(
                    key,
                    StoredResult(outcome, server, ready),
                    ttl=policy.cache_ttl,
                    size=size + len(key),
                    tool=call.name,
                    server=server,
                )
            return outcome
        finally:
            if not future.done():
                future.cancel()  # cancelled while waiting for another replica: followers try again
            self._in_flight.pop(key, None)
            if claimed:
                await self.store.release(key)

    async def _claim_or_wait(self, key: str) -> tuple[bool, StoredResult | None]:
        """(True, None): this replica computes `key`; (False, stored): another one just did.

        Polls (5 ms doubling to 50 ms) while another replica holds the claim; a claim older
        than `lock_ttl` expires in the store, so a stuck or dead replica holds nobody up longer.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lock_ttl
        delay = 0.005
        while True:
            if await self.store.claim(key, self.lock_ttl):
                # Claimed: the previous holder may have stored its answer just before letting go.
                cached = await self.store.get(key)
                if isinstance(cached, StoredResult) and await self._fresh(cached):
                    await self.store.release(key)
                    return False, cached
                return True, None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
            cached = await self.store.get(key)
            if isinstance(cached, StoredResult) and await self._fresh(cached):
                return False, cached
            if loop.time() > deadline:
                return False, None  # nobody answered in time: call without a claim

    async def _fresh(self, stored: StoredResult) -> bool:
        if self.still_valid is not None and not self.still_valid(stored.result):
            return False
        if stored.server is None or stored.server not in self.upstreams or stored.ready_since is None:
            return True  # the gateway's own tools, or a shared entry (cleared, not compared, on restarts)
        if self.upstreams[stored.server].ready_since != stored.ready_since:
            # The server restarted (or stopped) since: everything it answered before is stale.
            await self.store.clear(server=stored.server)
            return False
        return True

    async def clear(self, tool: str | None = None) -> int:
        return await self.store.clear(tool=tool)

    async def clear_server(self, server: str) -> int:
        return await self.store.clear(server=server)


def _scope(scope: str | None, call: ToolCall) -> str | None:
    """Whose result this is: None for a result any caller may get, else the caller (and its credentials)."""
    caller = call.caller
    # Unset: a user's (a token caller's) results are theirs alone; callers without a token hold the
    # operator's credential and share. Only `cache_scope: public` shares between users.
    if scope == "public" or (scope is None and caller.own_credentials is None and caller.principal is None):
        return None
    if caller.own_credentials is None:
        return caller.identity
    return f"{caller.identity}\x00{caller.own_credentials}"


def _as_hit(result: types.CallToolResult) -> types.CallToolResult:
    """A shallow copy marked as a hit: the stored object is shared and must never be changed."""
    return result.model_copy(update={"meta": {**(result.meta or {}), CACHE_META_KEY: "hit"}})
