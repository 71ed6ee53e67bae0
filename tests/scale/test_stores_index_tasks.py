"""The tool-index store and the task queue in Redis, in process, against a real redis-server.

Two links (or two queues) on the same Redis and key prefix stand for two replicas: what one
saves or claims, the other sees. Leases are 1 s here so expiry is quick and bounded.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexSnapshot
from mcp_nexus.catalog.index_store import IndexStore, IndexStoreError
from mcp_nexus.catalog.index_sync import IndexSync
from mcp_nexus.config.load import config_from_document
from mcp_nexus.config.stores import StoresSettings
from mcp_nexus.control.redis_queue import RedisTaskQueue
from mcp_nexus.control.sqlite_queue import SqliteTaskQueue
from mcp_nexus.control.task import ExecutionData, PlanStep, TaskPlan, TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskLeaseLostError, TaskNotFoundError, TaskQueueUnavailableError
from mcp_nexus.control.task_queues import open_task_queue
from mcp_nexus.stores.index_redis import RedisIndexStore
from mcp_nexus.stores.index_sqlite import SqliteIndexStore
from mcp_nexus.stores.redis_link import RedisLink
from mcp_nexus.stores.shared import Stores
from support.processes import free_port
from support.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.timeout(60)

LEASE = 1.0


def entry(server_id: str, tool_name: str, when: str) -> IndexEntry:
    return IndexEntry(
        server_id=server_id,
        tool_name=tool_name,
        name=f"{server_id}.{tool_name}",
        description=f"{tool_name} of {server_id}",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
        tags=["search"],
        last_updated=when,
    )


def snapshot(when: str, *tools: str) -> IndexSnapshot:
    return IndexSnapshot({"robot": tuple(entry("robot", t, when) for t in tools)}, when)


def iso_ago(seconds: float) -> str:
    moment = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


@pytest.fixture
async def links(redis: RedisServer) -> AsyncIterator[list[RedisLink]]:
    """Two links to the same Redis: two replicas.

    These tests are about what the stores keep and who claims what, so the links get a timeout a
    loaded 2-core runner always meets: with the 0.5 s default, the 16 claims sent at once open 16
    connections, one connect took longer (CI, stop 33), the link went local as designed and the
    other claims answered None. Going local on a slow Redis has its own tests below (timeout=0.3)."""
    made = [RedisLink(redis.url, timeout=5.0), RedisLink(redis.url, timeout=5.0)]
    yield made
    for link in made:
        await link.close()


# -- the tool index ----------------------------------------------------------------------------


async def test_one_replica_saves_the_index_and_another_loads_it_with_its_sync_time(
    links: list[RedisLink], prefix: str
) -> None:
    one, two = RedisIndexStore(links[0], prefix=prefix), RedisIndexStore(links[1], prefix=prefix)
    assert isinstance(one, IndexStore)
    assert await two.load() is None and await two.last_sync() is None
    saved = snapshot("2026-11-25T10:00:00Z", "navigate_to", "set_light")
    await one.save(saved)
    loaded = await two.load()
    assert loaded == saved  # every field of every entry, the order of servers and tools, the time
    assert await two.last_sync() == "2026-11-25T10:00:00Z"
    await two.save(snapshot("2026-11-25T11:00:00Z", "battery_level"))  # replaced whole
    again = await one.load()
    assert again is not None and [e.tool_name for e in again.entries()] == ["battery_level"]
    assert await one.last_sync() == "2026-11-25T11:00:00Z"
    assert prefix in one.location and "redis://" in one.location


async def test_the_index_kind_chooses_redis_or_the_local_file(
    redis: RedisServer, prefix: str, tmp_path: Path
) -> None:
    local = Stores(StoresSettings(default=redis.url, index="memory", key_prefix=prefix))
    shared = Stores(StoresSettings(default="memory", index=redis.url, key_prefix=prefix))
    try:
        assert isinstance(local.index_store(tmp_path / "i.sqlite3"), SqliteIndexStore)
        assert isinstance(shared.index_store(tmp_path / "i.sqlite3"), RedisIndexStore)
        assert isinstance(open_task_queue(local, tmp_path / "t.sqlite"), RedisTaskQueue)  # default: Redis
        assert isinstance(open_task_queue(shared, tmp_path / "t.sqlite"), SqliteTaskQueue)
        status = await shared.status()
        assert status["kinds"] == {
            "cache": "memory",
            "limits": "memory",
            "events": "memory",
            "index": "redis",
            "tasks": "memory",
            "pins": "memory",
            "oauth": "memory",
        }
    finally:
        await local.close()
        await shared.close()


async def test_an_index_in_a_redis_that_is_not_there_is_a_clear_store_error() -> None:
    link = RedisLink(f"redis://127.0.0.1:{free_port()}/0", timeout=0.3)
    store = RedisIndexStore(link, prefix="gone")
    try:
        with pytest.raises(
            IndexStoreError, match=re.escape("cannot read the tool index from redis://127.0.0.1")
        ):
            await store.load()
        with pytest.raises(IndexStoreError, match="cannot save the tool index"):
            await store.save(snapshot("2026-11-25T10:00:00Z", "x"))
    finally:
        await link.close()


async def test_a_replica_whose_snapshot_expires_adopts_a_newer_one_saved_by_another(
    links: list[RedisLink], prefix: str
) -> None:
    config, _problems = config_from_document(
        {
            "gateway": {"include_builtins": False, "index": {"cache_ttl_seconds": 600}},
            "servers": {"robot": {"command": "robot-server-not-started"}},
        }
    )
    store = RedisIndexStore(links[0], prefix=prefix)
    index = ToolIndex()
    sync = IndexSync(index, store, lambda: config, lambda: {})
    index.set_snapshot(snapshot(iso_ago(700), "navigate_to"))  # ours: expired
    assert not await sync.adopt_newer()  # nothing saved by anyone
    other = RedisIndexStore(links[1], prefix=prefix)
    await other.save(snapshot(iso_ago(5000), "old_tool"))  # older than ours: not adopted
    assert not await sync.adopt_newer()
    await other.save(snapshot(iso_ago(620), "stale_tool"))  # newer, but past the TTL too: sync instead
    assert not await sync.adopt_newer()
    fresh = snapshot(iso_ago(10), "navigate_to", "set_light")
    await other.save(fresh)
    assert await sync.adopt_newer()
    assert index.last_sync == fresh.last_sync
    assert {e.tool_name for e in index.get_all_tools()} == {"navigate_to", "set_light"}
    assert index.status.source == "cache" and "saved by another replica" in index.status.message
    assert not await sync.adopt_newer()  # the same snapshot again: nothing newer


# -- the task queue ----------------------------------------------------------------------------


def new_task(goal: str, *, steps: int = 0) -> UnifiedTask:
    task = UnifiedTask(execution_data=ExecutionData(goal=goal))
    if steps:
        task.plan = TaskPlan(steps=[PlanStep(index=i, description=f"step {i}") for i in range(steps)])
    return task


@pytest.fixture
async def queues(links: list[RedisLink], prefix: str) -> AsyncIterator[list[RedisTaskQueue]]:
    async with AsyncExitStack() as stack:
        made = [RedisTaskQueue(link, prefix=prefix, lease=LEASE) for link in links]
        for queue in made:
            stack.push_async_callback(queue.close)
        yield made


async def test_a_task_queued_on_one_replica_is_seen_and_listed_on_another(
    queues: list[RedisTaskQueue],
) -> None:
    a, b = queues
    first = await a.enqueue(new_task("first goal"))
    await asyncio.sleep(0.01)
    second = await a.enqueue(new_task("second goal"))
    seen = await b.get(first.id)
    assert (seen.goal, seen.status) == ("first goal", TaskStatus.PENDING)
    assert [t.id for t in await b.list()] == [second.id, first.id]  # newest first
    assert [t.id for t in await b.list(TaskStatus.PENDING, limit=1)] == [second.id]
    assert await b.list(TaskStatus.RUNNING) == []
    with pytest.raises(TaskNotFoundError):
        await b.get("no-such-task")


async def test_each_task_is_claimed_by_exactly_one_worker_oldest_first(queues: list[RedisTaskQueue]) -> None:
    a, b = queues
    ids = []
    for i in range(12):
        ids.append((await a.enqueue(new_task(f"goal {i}"))).id)
        await asyncio.sleep(0.002)
    claims = await asyncio.gather(*(q.claim_next() for q in [a, b] * 8))  # 16 claims for 12 tasks, at once
    claimed = [t.id for t in claims if t is not None]
    assert sorted(claimed) == sorted(ids) and len(claimed) == 12  # each once, none lost
    assert sum(1 for t in claims if t is None) == 4
    assert all(t.status is TaskStatus.RUNNING for t in claims if t is not None)
    assert {t.id for t in await b.list(TaskStatus.RUNNING)} == set(ids)
    assert await a.claim_next() is None
    oldest = await a.enqueue(new_task("later"))
    assert (await b.claim_next()).id == oldest.id  # type: ignore[union-attr]


async def test_a_worker_that_dies_leaves_its_task_to_another_after_the_lease_at_its_saved_step(
    queues: list[RedisTaskQueue],
) -> None:
    a, b = queues
    task = await a.enqueue(new_task("three steps", steps=3))
    claimed = await a.claim_next()
    assert claimed is not None and claimed.id == task.id
    claimed.plan.steps[0].status, claimed.plan.current = "done", 1  # type: ignore[union-attr]
    await a.save(claimed)  # step 1 done and saved; then the worker dies (no heartbeat, no save)
    await a.close()
    assert await b.claim_next() is None  # the lease still holds
    assert (await b.get(task.id)).status is TaskStatus.RUNNING
    await asyncio.sleep(LEASE + 0.2)
    resumed = await b.claim_next()
    assert resumed is not None and resumed.id == task.id
    assert resumed.resumed == 1 and resumed.plan is not None and resumed.plan.current == 1  # at step 2
    assert resumed.plan.steps[0].status == "done"
    with pytest.raises(TaskLeaseLostError):  # the first worker, back from the dead, writes nothing
        await a.save(claimed)
    assert await a.cancel_requested(task.id)  # and stops at its next step boundary
    resumed.status = TaskStatus.SUCCEEDED
    await b.save(resumed)
    assert (await a.get(task.id)).status is TaskStatus.SUCCEEDED
    assert await b.list(TaskStatus.RUNNING) == []


async def test_heartbeats_keep_a_long_task_with_its_worker(queues: list[RedisTaskQueue]) -> None:
    a, b = queues
    task = await a.enqueue(new_task("a long step"))
    claimed = await a.claim_next()
    assert claimed is not None
    await asyncio.sleep(LEASE * 2.5)  # well past one lease: renewed meanwhile
    assert await b.claim_next() is None
    assert await b.requeue_running() == []  # a start elsewhere does not take a live replica's task
    claimed.status = TaskStatus.SUCCEEDED
    await a.save(claimed)
    assert (await b.get(task.id)).status is TaskStatus.SUCCEEDED


async def test_a_task_handed_back_by_a_stopping_worker_is_taken_at_once(queues: list[RedisTaskQueue]) -> None:
    a, b = queues
    task = await a.enqueue(new_task("handed back"))
    claimed = await a.claim_next()
    assert claimed is not None
    claimed.status = TaskStatus.PENDING  # what TaskWorker.stop saves
    await a.save(claimed)
    again = await b.claim_next()  # no lease to wait for
    assert again is not None and again.id == task.id and again.resumed == 0


async def test_cancel_from_any_replica_pending_at_once_running_by_a_flag_saves_keep(
    queues: list[RedisTaskQueue],
) -> None:
    a, b = queues
    pending = await a.enqueue(new_task("never started"))
    cancelled = await b.cancel(pending.id)
    assert cancelled.status is TaskStatus.CANCELLED and cancelled.error == "cancelled before it started"
    assert [t.id for t in await a.list(TaskStatus.CANCELLED)] == [pending.id]
    assert await a.claim_next() is None  # a cancelled task is never claimed
    running = await a.enqueue(new_task("running"))
    claimed = await a.claim_next()
    assert claimed is not None and not claimed.cancel_requested
    flagged = await b.cancel(running.id)
    assert flagged.status is TaskStatus.RUNNING and flagged.cancel_requested
    await a.save(claimed)  # the owner's save, made from a copy without the flag, keeps it
    assert await a.cancel_requested(running.id)
    assert (await b.get(running.id)).cancel_requested
    claimed.status = TaskStatus.CANCELLED
    await a.save(claimed)
    assert (await b.cancel(running.id)).status is TaskStatus.CANCELLED  # finished: unchanged
    with pytest.raises(TaskNotFoundError):
        await b.cancel("no-such-task")


async def test_without_redis_the_worker_finds_nothing_and_the_api_gets_a_clear_error() -> None:
    link = RedisLink(f"redis://127.0.0.1:{free_port()}/0", timeout=0.3)
    queue = RedisTaskQueue(link, prefix="gone", lease=LEASE)
    try:
        assert await queue.claim_next() is None  # the worker's loop goes on, quietly
        assert await queue.requeue_running() == []
        with pytest.raises(TaskQueueUnavailableError, match=re.escape("the task queue at redis://127.0.0.1")):
            await queue.enqueue(new_task("nowhere"))
    finally:
        await queue.close()
        await link.close()


async def test_a_task_that_cannot_be_saved_while_redis_hangs_is_taken_again_once_it_answers(
    redis: RedisServer, prefix: str
) -> None:
    """Redis stops answering (CLIENT PAUSE: every command waits) while a worker saves its step: the
    worker gives the task up, stops renewing its lease, and once Redis answers again the task is
    taken (by any replica) at its last saved step instead of staying "running" forever."""
    links = [RedisLink(redis.url, timeout=0.3, retry_after=0.2) for _ in range(2)]
    a, b = (RedisTaskQueue(link, prefix=prefix, lease=LEASE) for link in links)
    raw = aioredis.Redis.from_url(redis.url)
    try:
        task = await a.enqueue(new_task("saved while redis hangs", steps=2))
        claimed = await a.claim_next()
        assert claimed is not None
        await raw.client_pause(1500)
        with pytest.raises(TaskQueueUnavailableError):
            await a.save(claimed)
        await asyncio.sleep(1.5 + LEASE + 0.3)  # the pause ends; the lease, no longer renewed, lapses
        again = await b.claim_next()
        assert again is not None and again.id == task.id and again.resumed == 1
    finally:
        await raw.aclose()
        for queue in (a, b):
            await queue.close()
        for link in links:
            await link.close()


async def test_the_queue_works_again_after_redis_restarts(tmp_path: Path) -> None:
    """Its scripts run by SHA: a restarted Redis has forgotten them (and every task: it saved nothing)."""
    with redis_server(tmp_path / "own-redis") as own:
        link = RedisLink(own.url, timeout=0.3, retry_after=0.2)
        queue = RedisTaskQueue(link, prefix="restart", lease=LEASE)
        try:
            await queue.enqueue(new_task("before"))
            assert await queue.claim_next() is not None
            own.stop()
            assert await queue.claim_next() is None
            own.start()
            await asyncio.sleep(0.3)  # past retry_after: the link tries again
            task = await queue.enqueue(new_task("after"))
            claimed = await queue.claim_next()
            assert claimed is not None and claimed.id == task.id
        finally:
            await queue.close()
            await link.close()
