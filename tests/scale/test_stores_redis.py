"""The Redis-backed stores in process, against a real redis-server: cache entries, claims, private
results, limits shared by two gateways, and a gateway whose Redis is not there at all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import redis.asyncio as aioredis

from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.steps.cache import StoredResult, decode_stored, encode_stored
from mcp_nexus.stores.memory_cache import MemoryCacheStore
from mcp_nexus.stores.redis_cache import RedisCacheStore
from mcp_nexus.stores.redis_link import RedisLink
from support.gateway import running_gateway
from support.governance_gateway import embedded, text
from support.processes import free_port
from support.redis_server import RedisServer


def document(tmp_path: Path, redis_url: str, prefix: str, **server: Any) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "offload_dir": str(tmp_path / "offload"), "rate_limit": None},
        # timeout: these tests check what replicas share, not how fast. On a loaded 2-core machine one
        # Redis answer can take longer than the 0.5 s default; the replica then goes local for
        # retry_after, by design, and a shared hit reads as a miss (seen once under extra load).
        "stores": {"default": redis_url, "key_prefix": prefix, "retry_after": 0.5, "timeout": 5},
        "servers": {"gov": embedded(**server)},
    }


@asynccontextmanager
async def gateways(n: int, doc: dict[str, Any]) -> AsyncIterator[list[Gateway]]:
    """`n` gateways in this process sharing the Redis of `doc`: replicas without the HTTP in between."""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(running_gateway(doc)) for _ in range(n)]


async def calls_made(gateway: Gateway, tool: str) -> int:
    result = await gateway.call_tool("gov.counts", {}, caller=Caller("test"))
    return int(json.loads(text(result)).get(tool, 0))


def stored(text_: str) -> StoredResult:
    result = types.CallToolResult(content=[types.TextContent(type="text", text=text_)])
    return StoredResult(result, "srv", None)


async def test_entries_live_in_redis_with_its_ttl_and_clear_by_tool_or_server(
    redis: RedisServer, prefix: str
) -> None:
    link = RedisLink(redis.url)
    local = MemoryCacheStore()
    store = RedisCacheStore(link, prefix=prefix, encode=encode_stored, decode=decode_stored, local=local)
    raw = aioredis.Redis.from_url(redis.url)
    try:
        await store.set("a\x001", stored("one"), ttl=0.3, size=10, tool="a", server="srv")
        await store.set("b\x001", stored("two"), ttl=30, size=10, tool="b", server="srv")
        await store.set("c\x001", stored("three"), ttl=30, size=10, tool="c", server="other")
        got = await store.get("a\x001")
        assert isinstance(got, StoredResult) and got.result.content[0].text == "one"  # type: ignore[union-attr]
        assert 0 < await raw.pttl(f"{prefix}:cache:v:a\x001") <= 300  # Redis expires it, not us
        assert local.stats().entries == 0  # nothing held in this process
        await asyncio.sleep(0.4)
        assert await store.get("a\x001") is None
        assert await store.clear(server="srv") == 1  # b (a has expired already)
        assert await store.get("c\x001") is not None
        assert await store.clear(tool="c") == 1
        await raw.set(f"{prefix}:cache:v:junk", b"not json")
        assert await store.get("junk") is None  # an unreadable entry is a miss, not a crash
        assert await store.entries() == 1
        assert await store.clear() == 1
    finally:
        await raw.aclose()
        await link.close()


async def test_a_claim_is_held_by_one_replica_until_released_or_expired(
    redis: RedisServer, prefix: str
) -> None:
    links = [RedisLink(redis.url), RedisLink(redis.url)]
    one, two = (
        RedisCacheStore(
            link, prefix=prefix, encode=encode_stored, decode=decode_stored, local=MemoryCacheStore()
        )
        for link in links
    )
    try:
        assert await one.claim("k", 5)
        assert not await two.claim("k", 5)
        await two.release("k")  # not its claim: nothing happens
        assert not await two.claim("k", 5)
        await one.release("k")
        assert await two.claim("k", 0.2)
        await asyncio.sleep(0.3)
        assert await one.claim("k", 5)  # the holder went quiet: its claim expired
    finally:
        for link in links:
            await link.close()


async def test_two_replicas_share_results_and_a_simultaneous_miss_calls_once(
    tmp_path: Path, redis: RedisServer, prefix: str
) -> None:
    doc = document(
        tmp_path, redis.url, prefix, tool_config={"sleep": {"cache_ttl": 60}, "stamp": {"cache_ttl": 60}}
    )
    async with gateways(2, doc) as (a, b):
        first = text(await a.call_tool("gov.stamp", {"key": "x"}))
        hit = await b.call_tool("gov.stamp", {"key": "x"})
        assert text(hit) == first and (hit.meta or {})["nexus/cache"] == "hit"
        assert await calls_made(b, "stamp") == 0
        answers = await asyncio.gather(*(gw.call_tool("gov.sleep", {"seconds": 0.3}) for gw in (a, b, a, b)))
        assert {text(r) for r in answers} == {"slept 0.3"}
        assert await calls_made(a, "sleep") + await calls_made(b, "sleep") == 1
        assert b.governance.cache.counters["gov.sleep"].merged >= 1


async def test_private_results_are_kept_per_caller(tmp_path: Path, redis: RedisServer, prefix: str) -> None:
    doc = document(
        tmp_path,
        redis.url,
        prefix,
        tool_config={"stamp": {"cache_ttl": 60, "cache_scope": "private"}, "stamp_args": {"cache_ttl": 60}},
    )
    alice, bob = Caller("http", "alice"), Caller("http", "bob")
    async with gateways(2, doc) as (a, b):
        # (Each gateway has its own embedded server: a count on b's shows that b called it.)
        for_alice = text(await a.call_tool("gov.stamp", {"key": "k"}, caller=alice))
        await b.call_tool("gov.stamp", {"key": "k"}, caller=bob)
        assert await calls_made(b, "stamp") == 1  # a private result is never another caller's hit
        assert text(await b.call_tool("gov.stamp", {"key": "k"}, caller=alice)) == for_alice
        assert await calls_made(b, "stamp") == 1  # ... but the same caller's, on any replica
        # Unset scope: shared, unless the call carries the caller's own credentials upstream.
        shared = text(await a.call_tool("gov.stamp_args", {"a": "1"}, caller=alice))
        assert text(await b.call_tool("gov.stamp_args", {"a": "1"}, caller=bob)) == shared
        with_token = Caller("http", "alice", own_credentials="fingerprint-of-alices-token")
        other_token = Caller("http", "alice", own_credentials="fingerprint-of-another-token")
        mine = text(await a.call_tool("gov.stamp_args", {"a": "1"}, caller=with_token))
        assert mine != shared
        assert text(await b.call_tool("gov.stamp_args", {"a": "1"}, caller=with_token)) == mine
        assert await calls_made(b, "stamp_args") == 0
        await b.call_tool("gov.stamp_args", {"a": "1"}, caller=other_token)
        assert await calls_made(b, "stamp_args") == 1


async def test_a_rate_limit_holds_for_two_replicas_together(
    tmp_path: Path, redis: RedisServer, prefix: str
) -> None:
    doc = document(tmp_path, redis.url, prefix, tool_config={"stamp": {"rate_limit": "5/second"}})
    async with gateways(2, doc) as (a, b):
        results = await asyncio.gather(*(gw.call_tool("gov.stamp", {"key": "r"}) for gw in (a, b) * 5))
        passed = [r for r in results if not r.is_error]  # type: ignore[union-attr]
        assert len(passed) == 5
        assert await calls_made(a, "stamp") + await calls_made(b, "stamp") == 5


async def test_a_gateway_whose_redis_is_not_there_serves_with_local_stores(
    tmp_path: Path, prefix: str
) -> None:
    nowhere = f"redis://127.0.0.1:{free_port()}/0"
    doc = document(
        tmp_path, nowhere, prefix, tool_config={"stamp": {"cache_ttl": 60, "rate_limit": "2/second"}}
    )
    async with running_gateway(doc) as gw:
        first = text(await gw.call_tool("gov.stamp", {"key": "z"}))
        assert text(await gw.call_tool("gov.stamp", {"key": "z"})) == first  # the local cache answers
        limited = [await gw.call_tool("gov.stamp", {"key": f"n{i}"}) for i in range(4)]
        assert sum(1 for r in limited if r.is_error) == 3  # type: ignore[union-attr]  # 2/second, one used above
        status = await gw.stores.status()
        assert status["degraded"] is True and "unavailable" in status["warning"]
        assert status["redis"][0]["url"].startswith("redis://127.0.0.1:")
        assert status["redis"][0]["local_fallbacks"] > 0


async def test_memory_is_the_default_and_needs_no_redis(tmp_path: Path) -> None:
    doc = {
        "gateway": {"include_builtins": False},
        "servers": {"gov": embedded(tool_config={"stamp": {"cache_ttl": 60}})},
    }
    async with running_gateway(doc) as gw:
        status = await gw.stores.status()
        assert status["kinds"] == {
            kind: "memory" for kind in ("cache", "limits", "events", "index", "tasks", "pins", "oauth")
        }
        assert status["redis"] == [] and status["degraded"] is False
        assert not gw.governance.cache.store.shared


async def test_a_redis_password_is_never_shown_or_logged(
    tmp_path: Path, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sekret-password-1234"
    nowhere = f"redis://:{secret}@127.0.0.1:{free_port()}/0"
    async with running_gateway(document(tmp_path, nowhere, prefix)) as gw:
        await gw.call_tool("gov.stamp", {"key": "s"})
        status = await gw.stores.status()
    assert status["degraded"] is True
    assert secret not in json.dumps(status) and ":***@" in status["redis"][0]["url"]
    assert "unavailable" in caplog.text and secret not in caplog.text


async def test_a_reload_keeps_the_stores_in_force(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from support.gateway import load

    doc: dict[str, Any] = {"gateway": {"include_builtins": False}, "servers": {"gov": embedded()}}
    async with running_gateway(doc) as gw:
        await gw.reload(load({**doc, "stores": {"default": "redis://127.0.0.1:1/0"}}))
        assert gw.config.stores.default == "memory"
        assert "stores only change when nexus serve restarts" in caplog.text
        assert (await gw.stores.status())["kinds"]["cache"] == "memory"
