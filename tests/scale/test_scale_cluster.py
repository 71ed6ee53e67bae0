"""Three `nexus serve` replicas behind HAProxy, one redis-server, one shared backend: real processes on 127.0.0.1.

What several replicas must share to behave as one gateway: cached results (and one upstream
call when they all miss at once), rate limits, list changes, offloaded files; handshake-era
sessions stick to their replica, 2026-07-28 requests go anywhere; and when Redis goes away
calls go on (each replica on its own) until it is back.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client

from support.cluster import Cluster, cluster
from support.polling import eventually_sync

FILE = re.compile(r"(tool_output_[0-9a-f]{32}\.json)")


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("scale"), replicas=3) as running_cluster:
        yield running_cluster


def text(answer: httpx2.Response) -> str:
    assert answer.status_code == 200, answer.text
    return str(answer.json()["content"][0]["text"])


def stores(replica: Any) -> dict[str, Any]:
    answer = replica.get("/api/stores")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_result_cached_by_one_replica_is_a_hit_on_the_others(c: Cluster) -> None:
    first = c.replicas[0].call("backend.stamp", {"key": "across"})
    assert "nexus/cache" not in (first.json().get("_meta") or {})  # a miss carries no mark
    for replica in c.replicas[1:]:
        again = replica.call("backend.stamp", {"key": "across"})
        assert text(again) == text(first)
        assert again.json()["_meta"]["nexus/cache"] == "hit"
    assert c.backend_counts()["stamp:across"] == 1
    assert all(stores(r)["kinds"]["cache"] == "redis" for r in c.replicas)
    assert all(r.get("/api/cache").json()["entries"] >= 1 for r in c.replicas)  # Redis's count, not local


def test_replicas_missing_at_once_make_one_upstream_call(c: Cluster) -> None:
    """Nine calls, three per replica, all at once, for a result that takes 0.4 s: one reaches the backend."""
    arguments = {"key": "flight", "delay_ms": 400}
    with ThreadPoolExecutor(9) as pool:
        answers = list(pool.map(lambda i: c.replicas[i % 3].call("backend.stamp", arguments), range(9)))
    assert len({text(a) for a in answers}) == 1
    assert c.backend_counts()["stamp:flight"] == 1


def test_a_rate_limit_of_5_per_second_holds_across_replicas(c: Cluster) -> None:
    """20 calls within one second through the balancer (round robin over 3 replicas): 5 pass, not 15
    (each replica alone would let 5 through: 15 in the first second)."""
    before = c.backend_counts().get("tick", 0)
    time.sleep(1.1)  # an empty window
    started = time.monotonic()
    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: c.call("backend.tick"), range(20)))
    took = time.monotonic() - started
    passed = [a for a in answers if not a.json().get("isError")]
    refused = [a for a in answers if a.json().get("isError")]
    assert all(text(a).startswith("SYSTEM_ALERT: Rate limit") for a in refused)
    if took < 1.0:
        assert len(passed) == 5, [text(a) for a in answers]
    else:  # a loaded machine stretched the burst over more than one window: 5 per window started
        assert 5 <= len(passed) <= 5 * math.ceil(took), (took, [text(a) for a in answers])
    assert c.backend_counts()["tick"] - before == len(passed)


def _sessions(replica: Any) -> int:
    return int(replica.get("/api/frontends").json()["frontends"]["http"]["sessions"])


async def test_list_changed_reaches_a_client_of_another_replica_and_sessions_stick(c: Cluster) -> None:
    """A handshake-era client through the balancer stays on one replica (else its session id is
    unknown there: 404); a tool grown through another replica reaches it as tools/list_changed."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with Client(f"{c.balancer}/mcp", mode="legacy", message_handler=on_message) as client:
        for _ in range(6):  # several requests, all of them to the session's own replica
            assert "backend.stamp" in {t.name for t in (await client.list_tools()).tools}
        mine = [r for r in c.replicas if _sessions(r) == 1]
        assert len(mine) == 1, [_sessions(r) for r in c.replicas]
        other = next(r for r in c.replicas if r is not mine[0])
        assert text(other.call("backend.grow", {"name": "grown_tool"})) == "grew grown_tool"
        with anyio.fail_after(10):
            await changed.wait()
        names = {t.name for t in (await client.list_tools()).tools}
        assert "backend.grown_tool" in names
        result = await client.call_tool("backend.grown_tool", {})
        assert result.content[0].text == "I am grown_tool"  # type: ignore[union-attr]
    assert stores(mine[0])["fanout"]["applied"] >= 1


async def test_a_2026_listener_hears_list_changes_caused_through_every_replica(c: Cluster) -> None:
    """subscriptions/listen lands on one replica; a tool grown through each replica in turn (so
    through at least two others than the listener's) reaches the listener every time."""
    async with (
        Client(f"{c.balancer}/mcp", mode="auto") as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        for i, replica in enumerate(c.replicas):
            name = f"listened_{i}"
            answer = await anyio.to_thread.run_sync(
                lambda r=replica, n=name: r.call("backend.grow", {"name": n})
            )
            assert text(answer) == f"grew {name}"
            with anyio.fail_after(10):
                async for _event in subscription:
                    break

            async def listed(expected: str = f"backend.{name}") -> bool:
                return expected in {t.name for t in (await client.list_tools()).tools}

            with anyio.fail_after(10):
                while not await listed():
                    await anyio.sleep(0.05)


async def test_2026_requests_go_to_any_replica(c: Cluster) -> None:
    def misses() -> list[int]:
        return [
            r.get("/api/cache").json()["tools"].get("backend.stamp", {}).get("misses", 0) for r in c.replicas
        ]

    before = misses()
    async with Client(f"{c.balancer}/mcp", mode="auto") as client:
        for i in range(6):
            result = await client.call_tool("backend.stamp", {"key": f"modern{i}"})
            assert result.content[0].text.startswith(f"backend:modern{i}:")  # type: ignore[union-attr]
    served = [after - b for after, b in zip(misses(), before, strict=True)]
    assert sum(served) == 6
    assert sum(1 for n in served if n) >= 2, served  # no stickiness without a session


def test_a_file_offloaded_on_one_replica_is_read_by_python_sandbox_on_another(c: Cluster) -> None:
    alert = text(c.replicas[0].call("backend.big_list", {"items": 400}))
    found = FILE.search(alert)
    assert found, alert[:300]
    code = "print(len(data), data[399]['id'])"
    answer = c.replicas[1].call("python_sandbox", {"code": code, "files": [found.group(1)]})
    assert not answer.json().get("isError"), text(answer)
    assert text(answer).strip() == "400 light.room_399"


def test_without_redis_calls_still_answer_and_sharing_resumes_when_it_is_back(c: Cluster) -> None:
    assert c.redis is not None
    c.redis.stop()
    try:
        one = c.replicas[0].call("backend.stamp", {"key": "down"})
        two = c.replicas[1].call("backend.stamp", {"key": "down"})
        assert text(one).startswith("backend:down:") and text(two).startswith("backend:down:")
        assert text(c.replicas[0].call("backend.stamp", {"key": "down"})) == text(one)  # its own cache
        assert c.call("backend.tick").status_code == 200
        status = stores(c.replicas[0])
        assert status["degraded"] is True and "redis is unavailable" in status["warning"]
        assert c.replicas[0].get("/api/servers").json()["stores_degraded"] is True
        assert "redis" in c.replicas[0].log.read_text() and "unavailable" in c.replicas[0].log.read_text()
        # A list change while Redis is away cannot be fanned out ...
        assert (
            text(c.replicas[0].call("backend.grow", {"name": "grown_while_down"})) == "grew grown_while_down"
        )
        time.sleep(0.5)
        assert "backend.grown_while_down" not in c.replicas[1].tool_names()
    finally:
        c.redis.start()
    for replica in c.replicas:
        eventually_sync(lambda r=replica: not stores(r)["degraded"], 15, "redis to be up again", interval=0.2)
    # ... so a replica whose subscription comes back lists its upstreams again.
    for replica in c.replicas:
        replica.wait_for(
            "the tool grown while down", lambda r=replica: "backend.grown_while_down" in r.tool_names(), 10
        )
    first = c.replicas[1].call("backend.stamp", {"key": "back"})
    again = c.replicas[2].call("backend.stamp", {"key": "back"})
    assert text(again) == text(first) and again.json()["_meta"]["nexus/cache"] == "hit"
    assert c.backend_counts()["stamp:back"] == 1


def test_config_rejects_a_store_that_is_not_memory_or_redis(tmp_path: Path) -> None:
    from mcp_nexus.config.schema import NexusConfig

    with pytest.raises(ValueError, match=re.escape("stores.cache must be 'memory' or a Redis URL")):
        NexusConfig.model_validate({"stores": {"cache": "postgres://db"}})
    config = NexusConfig.model_validate({"stores": {"default": "redis://127.0.0.1:1/0", "cache": "memory"}})
    assert config.stores.url_for("cache") == "memory" and config.stores.url_for("limits").startswith("redis")
