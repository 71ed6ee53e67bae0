"""The shared stores of the control plane and the tool index: sqlite (one replica) vs Redis (several).

    .venv/bin/python bench/task_queue.py [--tasks 500] [--steps 5] [--tools 1000,10000]

Task queue: `--tasks` tasks go through their whole life in one process, as the worker and the
executor drive them (enqueue, claim_next, a save per step with the history growing, the final
save, then get), once on the sqlite queue (a file in a temporary folder) and once on the
Redis queue (a real redis-server on 127.0.0.1, started here). Prints microseconds per
operation (p50/p99) and whole task lives per second.

Tool index: a snapshot of `--tools` made-up tools saved and loaded (median of 3) in the sqlite
file and in Redis (one JSON document).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (puts tests/ on sys.path for support.*)
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.index_snapshot import IndexSnapshot, utc_now_iso
from mcp_nexus.catalog.index_store import IndexStore
from mcp_nexus.control.redis_queue import RedisTaskQueue
from mcp_nexus.control.sqlite_queue import SqliteTaskQueue
from mcp_nexus.control.task import ExecutionData, PlanStep, StepRecord, TaskPlan, TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskQueue
from mcp_nexus.stores.index_redis import RedisIndexStore
from mcp_nexus.stores.index_sqlite import SqliteIndexStore
from mcp_nexus.stores.redis_link import RedisLink
from support.redis_server import redis_server


def micros(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{statistics.median(ordered) * 1e6:7.0f} / {p99 * 1e6:7.0f}"


async def timed(samples: list[float], work: Awaitable[Any]) -> Any:
    started = time.perf_counter()
    result = await work
    samples.append(time.perf_counter() - started)
    return result


async def task_lives(queue: TaskQueue, tasks: int, steps: int) -> dict[str, Any]:
    ops: dict[str, list[float]] = {"enqueue": [], "claim_next": [], "save": [], "get": []}
    started = time.perf_counter()
    for i in range(tasks):
        task = UnifiedTask(execution_data=ExecutionData(goal=f"bench goal {i}"))
        task.plan = TaskPlan(
            steps=[PlanStep(index=s, description=f"step {s} of goal {i}") for s in range(steps)]
        )
        await timed(ops["enqueue"], queue.enqueue(task))
        claimed = await timed(ops["claim_next"], queue.claim_next())
        assert claimed is not None and claimed.id == task.id
        for s in range(steps):
            claimed.history.append(
                StepRecord(index=s, goal=f"step {s}", tool="backend.journal", ok=True, result="noted " * 20)
            )
            claimed.plan.steps[s].status, claimed.plan.current = "done", s + 1  # type: ignore[union-attr]
            if s == steps - 1:
                claimed.status = TaskStatus.SUCCEEDED
            await timed(ops["save"], queue.save(claimed))
        seen = await timed(ops["get"], queue.get(task.id))
        assert seen.status is TaskStatus.SUCCEEDED
    took = time.perf_counter() - started
    return {"ops": ops, "per_second": tasks / took}


def snapshot(tools: int) -> IndexSnapshot:
    now = utc_now_iso()
    servers: dict[str, tuple[IndexEntry, ...]] = {}
    for server in range(max(1, tools // 100)):
        server_id = f"server{server}"
        servers[server_id] = tuple(
            IndexEntry(
                server_id=server_id,
                tool_name=f"tool_{t}",
                name=f"{server_id}.tool_{t}",
                description=f"Does thing {t} of {server_id}: reads, writes and reports the result",
                input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
                tags=["search"],
                last_updated=now,
            )
            for t in range(min(100, tools))
        )
    return IndexSnapshot(servers, now)


async def index_times(store: IndexStore, saved: IndexSnapshot) -> tuple[float, float]:
    saves, loads = [], []
    for _ in range(3):
        await timed(saves, store.save(saved))
        loaded = await timed(loads, store.load())
        assert loaded is not None and loaded.tool_count == saved.tool_count
    return statistics.median(saves), statistics.median(loads)


async def run(args: argparse.Namespace, redis_url: str, folder: Path) -> None:
    link = RedisLink(redis_url, timeout=5.0)
    queues: dict[str, Callable[[], TaskQueue]] = {
        "sqlite": lambda: SqliteTaskQueue(folder / "tasks.sqlite"),
        "redis": lambda: RedisTaskQueue(link, prefix="bench", lease=15.0),
    }
    print(f"task queue: {args.tasks} tasks x {args.steps} steps; microseconds p50 / p99")
    print(f"{'store':8} {'enqueue':>17} {'claim_next':>17} {'save':>17} {'get':>17} {'tasks/s':>9}")
    for name, make in queues.items():
        queue = make()
        measured = await task_lives(queue, args.tasks, args.steps)
        await queue.close()
        ops = measured["ops"]
        print(
            f"{name:8} {micros(ops['enqueue']):>17} {micros(ops['claim_next']):>17} "
            f"{micros(ops['save']):>17} {micros(ops['get']):>17} {measured['per_second']:9.0f}"
        )
    print("\ntool index: median of 3, milliseconds")
    print(f"{'tools':>7} {'sqlite save':>12} {'sqlite load':>12} {'redis save':>11} {'redis load':>11}")
    for tools in args.tools:
        saved = snapshot(tools)
        sqlite = await index_times(SqliteIndexStore(folder / f"index{tools}.sqlite3"), saved)
        redis = await index_times(RedisIndexStore(link, prefix=f"bench{tools}"), saved)
        print(
            f"{tools:7} {sqlite[0] * 1e3:12.1f} {sqlite[1] * 1e3:12.1f} {redis[0] * 1e3:11.1f} {redis[1] * 1e3:11.1f}"
        )
    await link.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tools", type=lambda v: [int(x) for x in v.split(",")], default=[1000, 10000])
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        with redis_server(folder / "redis") as redis:
            asyncio.run(run(args, redis.url, folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
