"""Two `nexus serve` replicas sharing one redis-server for their tool index and their control plane's
task queue (stores.index, stores.tasks), with one shared backend: all real processes on 127.0.0.1.

The control plane routes with the rule router (no LLM): a goal naming the backend's `journal`
tool is one step calling it with the goal as its text; a text saying `wait N s` makes that step
slow, so a replica can be killed (SIGKILL) while it runs. Leases are 1.5 s so a takeover is quick.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest

from support.cluster import replica_config, start_replicas
from support.processes import free_port, running, wait_for_http
from support.redis_server import RedisServer, redis_server
from support.served_gateway import ServedGateway

pytestmark = pytest.mark.timeout(120)

TASK_LEASE = 1.5
FINISHED = ("succeeded", "failed", "cancelled")


@dataclass
class Pair:
    a: ServedGateway
    b: ServedGateway
    redis: RedisServer


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """Replica A starts alone (it syncs the index and saves it in Redis), then replica B."""
    tmp_path = tmp_path_factory.mktemp("scale-tasks")
    with ExitStack() as stack:
        redis = stack.enter_context(redis_server(tmp_path / "redis"))
        backend_port = free_port()
        backend = stack.enter_context(
            running(
                [sys.executable, "-m", "support.shared_backend", str(backend_port)],
                log=tmp_path / "backend.log",
            )
        )
        wait_for_http(f"http://127.0.0.1:{backend_port}/", timeout=30, proc=backend)
        document = replica_config(
            f"http://127.0.0.1:{backend_port}/mcp",
            redis.url,
            tmp_path / "offload",
            f"t{uuid.uuid4().hex[:8]}",
        )
        document["stores"]["task_lease"] = TASK_LEASE
        document["control"] = {
            "enabled": True,
            "queue_path": str(tmp_path / "never-used.sqlite"),  # the queue is in Redis
            "retry_backoff": 0.01,
        }
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
        (a,), _ = start_replicas(tmp_path / "a", [document], stack)
        a.wait_for("A to save its index", lambda: a.get("/api/index").json()["syncs"] >= 1)
        (b,), _ = start_replicas(tmp_path / "b", [document], stack)
        yield Pair(a, b, redis)


def counts(replica: ServedGateway) -> dict[str, int]:
    answer = replica.call("backend.counts")
    assert answer.status_code == 200, answer.text
    return dict(json.loads(answer.json()["content"][0]["text"]))


def submit(replica: ServedGateway, goal: str) -> str:
    answer = replica.post("/api/tasks", {"goal": goal})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def finished(replica: ServedGateway, task_id: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view: dict[str, Any] = replica.get(f"/api/tasks/{task_id}").json()
        if view["status"] in FINISHED:
            return view
        time.sleep(0.1)
    raise AssertionError(
        f"task {task_id} did not finish in {timeout} s: {view}\n{replica.log.read_text()[-3000:]}"
    )


def test_a_replica_starting_after_another_serves_the_index_it_saved(pair: Pair) -> None:
    first, second = pair.a.get("/api/index").json(), pair.b.get("/api/index").json()
    assert (second["source"], second["syncs"]) == ("cache", 0), second  # loaded from Redis, no sync
    assert second["last_sync"] == first["last_sync"] is not None
    assert second["tools"] == first["tools"] and second["tools"] >= 6
    assert pair.a.get("/api/stores").json()["kinds"]["index"] == "redis"
    assert pair.b.get("/api/stores").json()["kinds"]["tasks"] == "redis"


def test_a_sync_on_one_replica_is_served_at_once_by_the_other(pair: Pair) -> None:
    """A's new snapshot is announced on the events bus; B adopts it from Redis without asking the servers."""
    before = pair.b.get("/api/index").json()
    time.sleep(1.1)  # last_sync counts whole seconds: the new one must be later
    synced = pair.a.post("/api/index/sync").json()
    assert synced["last_sync"] > before["last_sync"]
    pair.b.wait_for(
        "B to adopt A's new snapshot",
        lambda: pair.b.get("/api/index").json()["last_sync"] == synced["last_sync"],
        timeout=10,
    )
    after = pair.b.get("/api/index").json()
    assert after["syncs"] == before["syncs"] == 0  # B never asked the servers itself
    assert "saved by another replica" in after["message"]


def test_a_task_submitted_through_one_replica_runs_once_and_is_seen_from_the_other(pair: Pair) -> None:
    goal = "write the journal note alpha"
    task_id = submit(pair.a, goal)
    view = finished(pair.b, task_id)
    assert view["status"] == "succeeded", view
    assert [(h["tool"], h["ok"]) for h in view["history"]] == [("backend.journal", True)]
    assert view["history"][0]["arguments"] == {"text": goal}
    assert task_id in {t["id"] for t in pair.b.get("/api/tasks?status=succeeded").json()["tasks"]}
    assert pair.a.get(f"/api/tasks/{task_id}").json()["history"] == view["history"]
    time.sleep(1.2)  # past a worker's poll: nobody runs it again
    assert counts(pair.a)[f"journal:{goal}"] == 1


def runner_of(pair: Pair, task_id: str, timeout: float = 20.0) -> ServedGateway:
    """The replica whose worker started the task (it logs `task <id>: started`)."""
    started = f"task {task_id}: started"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for replica in (pair.a, pair.b):
            if started in replica.log.read_text():
                return replica
        time.sleep(0.05)
    raise AssertionError(f"no replica started task {task_id}")


def test_run_goal_waits_for_a_task_that_the_other_replica_runs(pair: Pair) -> None:
    """One worker per replica: while the replica R runs a slow task, a goal given to R's nexus.run_goal
    is taken by the other replica's worker; R's wait still answers with the finished task."""
    slow = submit(pair.a, "write the journal note delta, wait 3 s")
    busy = runner_of(pair, slow)
    other = pair.b if busy is pair.a else pair.a
    answer = busy.call("nexus.run_goal", {"goal": "write the journal note echo", "wait_seconds": 20})
    assert answer.status_code == 200, answer.text
    text = answer.json()["content"][0]["text"]
    first = text.splitlines()[0]
    assert first.endswith(": succeeded"), text
    quick = first.split()[1]
    assert runner_of(pair, quick) is other  # run there, waited for here
    assert busy.get(f"/api/tasks/{slow}").json()["status"] == "running"  # answered before the slow one ended
    assert finished(other, slow)["status"] == "succeeded"


def test_a_replica_killed_mid_task_leaves_it_to_the_other_after_the_lease(pair: Pair) -> None:
    goal = "write the journal note bravo, wait 3 s"
    task_id = submit(pair.a, goal)
    runner = runner_of(pair, task_id)
    runner.wait_for("the step to reach the backend", lambda: counts(runner).get(f"journal:{goal}") == 1, 20)
    survivor = pair.b if runner is pair.a else pair.a
    assert runner.proc is not None
    os.killpg(runner.proc.pid, signal.SIGKILL)  # mid-step: no save, no hand-back, no goodbye
    runner.proc.wait(10)
    killed_at = time.monotonic()
    assert survivor.get(f"/api/tasks/{task_id}").json()["status"] == "running"  # still the dead one's lease
    assert task_id not in survivor.get("/api/stores").json()["tasks"]["running_here"]
    survivor.wait_for(
        "the survivor to take the task over",
        lambda: task_id in survivor.get("/api/stores").json()["tasks"]["running_here"],
        timeout=15,
    )
    view = finished(survivor, task_id)
    assert view["status"] == "succeeded", view
    assert view["resumed"] == 1
    assert time.monotonic() - killed_at >= TASK_LEASE  # not before the lease expired
    assert [(h["tool"], h["ok"]) for h in view["history"]] == [("backend.journal", True)]
    assert "taken over from a replica whose lease expired" in survivor.log.read_text()
    # The step in flight when the replica died ran again (at least once per step); the task ran to its end once.
    assert counts(survivor)[f"journal:{goal}"] == 2
