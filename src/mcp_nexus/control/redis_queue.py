"""The task queue in Redis (`stores.tasks: redis://...`): one queue that every replica's worker takes from.

Same interface and semantics as sqlite_queue.py (whole task saved after every step, a cancel
flag that saving never clears, oldest pending first), plus leases, because a replica can die
while another goes on:

- claiming is one Lua script: the oldest pending task moves to running, owned by this
  replica's worker, with a lease key `<p>:tasks:lease:<id>` that expires after
  `stores.task_lease` seconds; two workers never claim the same task;
- while a task runs, a heartbeat renews its lease every third of that time;
- a replica that dies (SIGKILL, lost machine) stops renewing: the next claim by any replica
  (every worker looks once a second) puts the task whose lease is gone back to pending and
  takes it; it resumes at its saved step (`resumed` + 1), like a restart with sqlite;
- a save by a worker that no longer owns the task (it stalled longer than the lease and
  another replica took over) is refused (TaskLeaseLostError): one task, one writer.

Keys (`<p>` = `stores.key_prefix`): `<p>:tasks:task:<id>` a hash (data = the task's JSON,
status, cancel, owner, reclaimed), `<p>:tasks:all` and `<p>:tasks:by:<status>` sorted sets
scored by creation time (listing newest first, claiming oldest first). The scripts name keys
they build themselves: one Redis (or a primary with replicas), not Redis Cluster.

Why not saq (docs/SCALING.md, "tasks"): its job model (a registered function with kwargs and a
result) and its heartbeats and abort polling live in saq's own Worker, which would replace this
worker and executor; its `Job.update` is a read-then-write that would clear a cancel flag set
meanwhile; reclaiming a dead worker's job first waits for that worker to acknowledge an abort;
and it pins redis-py < 8 (Nexus has 8).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import time
import uuid
from typing import Any

from redis.exceptions import WatchError

from mcp_nexus.config.secrets import mask_url
from mcp_nexus.control.task import TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskLeaseLostError, TaskNotFoundError, TaskQueueUnavailableError
from mcp_nexus.stores.redis_link import RedisLink, RedisUnavailableError

logger = logging.getLogger(__name__)

# Tasks whose lease is gone go back to pending (ARGV[1] = the key prefix of the queue).
_RECLAIM = """
local p = ARGV[1]
local reclaimed = {}
for _, id in ipairs(redis.call('ZRANGE', p .. ':by:running', 0, -1)) do
  if redis.call('EXISTS', p .. ':lease:' .. id) == 0 then
    local created = redis.call('ZSCORE', p .. ':by:running', id)
    redis.call('ZREM', p .. ':by:running', id)
    if redis.call('EXISTS', p .. ':task:' .. id) == 1 then
      redis.call('HSET', p .. ':task:' .. id, 'status', 'pending', 'owner', '', 'reclaimed', '1')
      redis.call('ZADD', p .. ':by:pending', created, id)
      table.insert(reclaimed, id)
    end
  end
end
"""

RECLAIM_SCRIPT = _RECLAIM + "return reclaimed\n"

# Reclaim, then claim the oldest pending task for ARGV[2] with a lease of ARGV[3] ms.
CLAIM_SCRIPT = (
    _RECLAIM
    + """
local first = redis.call('ZRANGE', p .. ':by:pending', 0, 0)
if #first == 0 then return false end
local id = first[1]
local key = p .. ':task:' .. id
local created = redis.call('ZSCORE', p .. ':by:pending', id)
redis.call('ZREM', p .. ':by:pending', id)
redis.call('ZADD', p .. ':by:running', created, id)
redis.call('HSET', key, 'status', 'running', 'owner', ARGV[2])
redis.call('SET', p .. ':lease:' .. id, ARGV[2], 'PX', ARGV[3])
local was_reclaimed = redis.call('HGET', key, 'reclaimed') or '0'
redis.call('HSET', key, 'reclaimed', '0')
return {id, redis.call('HGET', key, 'data'), redis.call('HGET', key, 'cancel') or '0', was_reclaimed}
"""
)

# The owner's save: ARGV = prefix, id, owner, status, data, cancel. 1 saved, 0 no such task, -1 not the owner.
SAVE_SCRIPT = """
local p, id = ARGV[1], ARGV[2]
local key = p .. ':task:' .. id
if redis.call('EXISTS', key) == 0 then return 0 end
if redis.call('HGET', key, 'owner') ~= ARGV[3] then return -1 end
local old = redis.call('HGET', key, 'status')
local new = ARGV[4]
redis.call('HSET', key, 'data', ARGV[5], 'status', new)
if ARGV[6] == '1' then redis.call('HSET', key, 'cancel', '1') end
if old ~= new then
  local created = redis.call('ZSCORE', p .. ':all', id) or 0
  redis.call('ZREM', p .. ':by:' .. old, id)
  redis.call('ZADD', p .. ':by:' .. new, created, id)
end
if new ~= 'running' then
  redis.call('HSET', key, 'owner', '')
  redis.call('DEL', p .. ':lease:' .. id)
end
return 1
"""

# Renew the leases this worker still owns: ARGV = prefix, owner, lease ms, ids...; answers the ids it lost.
RENEW_SCRIPT = """
local p, owner = ARGV[1], ARGV[2]
local lost = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if redis.call('HGET', p .. ':task:' .. id, 'owner') == owner then
    redis.call('SET', p .. ':lease:' .. id, owner, 'PX', ARGV[3])
  else
    table.insert(lost, id)
  end
end
return lost
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisTaskQueue:
    def __init__(self, link: RedisLink, *, prefix: str, lease: float = 15.0) -> None:
        self.link = link
        self.prefix = f"{prefix}:tasks"
        self.lease = lease
        self.owner = uuid.uuid4().hex[:12]  # this worker: owns the tasks it claimed
        self._held: set[str] = set()  # tasks this worker runs (their leases are renewed)
        self._lost: set[str] = set()  # tasks another replica took over
        self._heartbeat: asyncio.Task[None] | None = None
        # Sent once, then run by SHA (EVALSHA; redis-py loads a script again after a Redis restart).
        client = link.client
        self._claim = client.register_script(CLAIM_SCRIPT)
        self._reclaim = client.register_script(RECLAIM_SCRIPT)
        self._save = client.register_script(SAVE_SCRIPT)
        self._renew = client.register_script(RENEW_SCRIPT)

    @property
    def location(self) -> str:
        return f"{mask_url(self.link.url)} keys {self.prefix}:*"

    @property
    def held(self) -> list[str]:
        """The tasks this replica's worker runs now (whose leases it renews): for /api/stores."""
        return sorted(self._held)

    def _key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    async def _run(self, operation: Any) -> Any:
        try:
            return await self.link.run(operation)
        except RedisUnavailableError as exc:
            raise TaskQueueUnavailableError(
                f"the task queue at {self.location} is unavailable: {exc}"
            ) from exc

    async def _script(self, script: Any, *args: Any) -> Any:
        return await self._run(lambda client: script(keys=[], args=[self.prefix, *args], client=client))

    @staticmethod
    def _load(data: Any, status: Any, cancel: Any) -> UnifiedTask:
        task = UnifiedTask.model_validate_json(data)
        task.status = TaskStatus(_text(status))  # the hash's status field is the authority
        task.cancel_requested = task.cancel_requested or _text(cancel or "0") == "1"
        return task

    # -- the design's interface ---------------------------------------------------------------

    async def enqueue(self, task: UnifiedTask) -> UnifiedTask:
        task.status = TaskStatus.PENDING
        task.updated_at = time.time()
        key = self._key(task.id)

        async def insert(client: Any) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.hset(
                    key,
                    mapping={
                        "data": task.model_dump_json(),
                        "status": str(task.status),
                        "cancel": "1" if task.cancel_requested else "0",
                        "owner": "",
                        "reclaimed": "0",
                    },
                )
                pipe.zadd(f"{self.prefix}:all", {task.id: task.created_at})
                pipe.zadd(f"{self.prefix}:by:{task.status}", {task.id: task.created_at})
                await pipe.execute()

        await self._run(insert)
        return task

    async def get(self, task_id: str) -> UnifiedTask:
        fields = await self._run(lambda client: client.hmget(self._key(task_id), "data", "status", "cancel"))
        if fields[0] is None:
            raise TaskNotFoundError(task_id)
        return self._load(*fields)

    async def cancel(self, task_id: str) -> UnifiedTask:
        key = self._key(task_id)

        async def mark(client: Any) -> UnifiedTask | None:
            async with client.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        await pipe.watch(key)
                        fields = await pipe.hmget(key, "data", "status", "cancel")
                        if fields[0] is None:
                            return None
                        task = self._load(*fields)
                        if task.status.finished:
                            await pipe.unwatch()
                            return task
                        pipe.multi()
                        if task.status is TaskStatus.PENDING:
                            task.status, task.finished_at = TaskStatus.CANCELLED, time.time()
                            task.error = "cancelled before it started"
                            task.cancel_requested, task.updated_at = True, time.time()
                            pipe.hset(
                                key, mapping={"data": task.model_dump_json(), "status": str(task.status)}
                            )
                            pipe.zrem(f"{self.prefix}:by:{TaskStatus.PENDING}", task_id)
                            pipe.zadd(f"{self.prefix}:by:{task.status}", {task_id: task.created_at})
                        # A running task's data is its owner's to write: only the flag, which saves keep.
                        task.cancel_requested = True
                        pipe.hset(key, "cancel", "1")
                        await pipe.execute()
                        return task
                    except WatchError:
                        continue  # claimed or saved meanwhile: look again

        task = await self._run(mark)
        if task is None:
            raise TaskNotFoundError(task_id)
        return task

    async def list(self, status: TaskStatus | None = None, limit: int = 100) -> list[UnifiedTask]:
        index = f"{self.prefix}:all" if status is None else f"{self.prefix}:by:{status}"

        async def select(client: Any) -> list[Any]:
            ids = await client.zrevrange(index, 0, limit - 1)
            async with client.pipeline(transaction=False) as pipe:
                for task_id in ids:
                    pipe.hmget(self._key(_text(task_id)), "data", "status", "cancel")
                return list(await pipe.execute())

        rows = await self._run(select)
        return [self._load(*fields) for fields in rows if fields[0] is not None]

    # -- what the worker and the executor need -----------------------------------------------------

    async def save(self, task: UnifiedTask) -> None:
        if task.id in self._lost:
            raise TaskLeaseLostError(task.id)
        task.updated_at = time.time()
        try:
            saved = await self._script(
                self._save,
                task.id,
                self.owner,
                str(task.status),
                task.model_dump_json(),
                "1" if task.cancel_requested else "0",
            )
        except TaskQueueUnavailableError:
            self._give_up(task.id)
            raise
        if int(saved) == -1:
            self._lost_task(task.id)
            raise TaskLeaseLostError(task.id)
        if task.status is not TaskStatus.RUNNING:
            self._held.discard(task.id)  # finished, or handed back (pending): no lease to renew

    async def cancel_requested(self, task_id: str) -> bool:
        if task_id in self._lost:
            return True  # another replica runs it now: stop here
        try:
            flag = await self._run(lambda client: client.hget(self._key(task_id), "cancel"))
        except TaskQueueUnavailableError:
            self._give_up(task_id)
            raise
        return flag is not None and _text(flag) == "1"

    async def claim_next(self) -> UnifiedTask | None:
        try:
            claimed = await self._script(self._claim, self.owner, int(self.lease * 1000))
        except TaskQueueUnavailableError:
            return None  # the link logged it; the worker looks again in a second
        if not claimed:
            return None
        task_id, data, cancel, reclaimed = (_text(part) for part in claimed)
        self._held.add(task_id)
        self._start_heartbeat()
        task = self._load(data, TaskStatus.RUNNING, cancel)
        if reclaimed == "1":
            task.resumed += 1
            logger.info(
                "task %s: taken over from a replica whose lease expired (resumed #%d)", task_id, task.resumed
            )
        task.updated_at = time.time()
        task.started_at = task.started_at or task.updated_at
        await self.save(task)
        return task

    async def requeue_running(self) -> builtins.list[str]:
        """Only the tasks whose lease expired: the others run on live replicas."""
        try:
            ids = await self._script(self._reclaim)
        except TaskQueueUnavailableError:
            return []
        return [_text(task_id) for task_id in ids]

    async def close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(BaseException):
                await self._heartbeat
            self._heartbeat = None

    # -- leases ------------------------------------------------------------------------------------

    def _give_up(self, task_id: str) -> None:
        """The worker stops a task it cannot save (Redis is down): its lease lapses, so once Redis is
        back the task is taken again (by any replica) at its last saved step, not left running forever."""
        self._held.discard(task_id)

    def _lost_task(self, task_id: str) -> None:
        self._held.discard(task_id)
        if task_id not in self._lost:
            self._lost.add(task_id)
            logger.warning("task %s: taken over by another replica (this worker's lease expired)", task_id)

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.ensure_future(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            if not self._held:
                continue
            try:
                lost = await self._script(
                    self._renew, self.owner, int(self.lease * 1000), *sorted(self._held)
                )
            except TaskQueueUnavailableError:
                continue  # the link logged it; the next beat tries again
            for task_id in lost:
                self._lost_task(_text(task_id))
