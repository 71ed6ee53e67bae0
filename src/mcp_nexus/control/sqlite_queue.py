"""The durable task queue: one sqlite file in the data folder (`<data dir>/control/tasks.sqlite` by default).

Each task is one row: its id, status and times as columns (for listing and claiming) and the
whole task as JSON. The cancel flag is a column of its own that saving never clears, so a
cancel that lands while the executor holds the task is not overwritten by its next save.
sqlite calls run in a worker thread (they block); one lock serialises them in this process,
and sqlite's own locking protects the file from another process.
"""

from __future__ import annotations

import asyncio
import builtins
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from mcp_nexus.control.task import TaskStatus, UnifiedTask
from mcp_nexus.control.task_queue import TaskNotFoundError

SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, created_at);
"""


class SqliteTaskQueue:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    async def _run(self, fn: Any, *args: Any) -> Any:
        def locked() -> Any:
            with self._lock:
                return fn(*args)

        return await asyncio.to_thread(locked)

    @staticmethod
    def _load(row: tuple[str, int]) -> UnifiedTask:
        task = UnifiedTask.model_validate_json(row[0])
        task.cancel_requested = task.cancel_requested or bool(row[1])
        return task

    # -- the design's interface ---------------------------------------------------------------

    async def enqueue(self, task: UnifiedTask) -> UnifiedTask:
        task.status = TaskStatus.PENDING
        task.updated_at = time.time()

        def insert() -> None:
            self._db.execute(
                "INSERT INTO tasks (id, status, cancel_requested, created_at, updated_at, data) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    task.id,
                    str(task.status),
                    int(task.cancel_requested),
                    task.created_at,
                    task.updated_at,
                    task.model_dump_json(),
                ),
            )

        await self._run(insert)
        return task

    async def get(self, task_id: str) -> UnifiedTask:
        def select() -> tuple[str, int] | None:
            row: tuple[str, int] | None = self._db.execute(
                "SELECT data, cancel_requested FROM tasks WHERE id = ?", (task_id,)
            ).fetchone()
            return row

        row = await self._run(select)
        if row is None:
            raise TaskNotFoundError(task_id)
        return self._load(row)

    async def cancel(self, task_id: str) -> UnifiedTask:
        def mark() -> tuple[str, int] | None:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT data, cancel_requested FROM tasks WHERE id = ?", (task_id,)
                ).fetchone()
                if row is None:
                    return None
                task = self._load(row)
                if task.status is TaskStatus.PENDING:
                    task.status, task.finished_at = TaskStatus.CANCELLED, time.time()
                    task.error = "cancelled before it started"
                if not task.status.finished:
                    task.cancel_requested = True
                task.updated_at = time.time()
                self._db.execute(
                    "UPDATE tasks SET status = ?, cancel_requested = ?, updated_at = ?, data = ? WHERE id = ?",
                    (
                        str(task.status),
                        int(task.cancel_requested),
                        task.updated_at,
                        task.model_dump_json(),
                        task_id,
                    ),
                )
                self._db.execute("COMMIT")
                return task.model_dump_json(), int(task.cancel_requested)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

        row = await self._run(mark)
        if row is None:
            raise TaskNotFoundError(task_id)
        return self._load(row)

    async def list(self, status: TaskStatus | None = None, limit: int = 100) -> list[UnifiedTask]:
        def select() -> list[tuple[str, int]]:
            if status is None:
                query, args = (
                    "SELECT data, cancel_requested FROM tasks ORDER BY created_at DESC LIMIT ?",
                    (limit,),
                )
            else:
                query = "SELECT data, cancel_requested FROM tasks WHERE status = ? ORDER BY created_at DESC LIMIT ?"
                args = (str(status), limit)  # type: ignore[assignment]
            rows: list[tuple[str, int]] = self._db.execute(query, args).fetchall()
            return rows

        return [self._load(row) for row in await self._run(select)]

    # -- what the worker and the executor need -----------------------------------------------------

    async def save(self, task: UnifiedTask) -> None:
        task.updated_at = time.time()
        data = task.model_dump_json()

        def update() -> None:
            # The cancel flag is never cleared here: a cancel may have landed since the task was read.
            self._db.execute(
                "UPDATE tasks SET status = ?, cancel_requested = MAX(cancel_requested, ?), updated_at = ?, data = ? WHERE id = ?",
                (str(task.status), int(task.cancel_requested), task.updated_at, data, task.id),
            )

        await self._run(update)

    async def cancel_requested(self, task_id: str) -> bool:
        def select() -> bool:
            row = self._db.execute("SELECT cancel_requested FROM tasks WHERE id = ?", (task_id,)).fetchone()
            return bool(row and row[0])

        result: bool = await self._run(select)
        return result

    async def claim_next(self) -> UnifiedTask | None:
        def claim() -> tuple[str, int] | None:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT data, cancel_requested FROM tasks WHERE status = ? ORDER BY created_at LIMIT 1",
                    (str(TaskStatus.PENDING),),
                ).fetchone()
                if row is None:
                    self._db.execute("COMMIT")
                    return None
                task = self._load(row)
                task.status = TaskStatus.RUNNING
                task.updated_at = time.time()
                task.started_at = task.started_at or task.updated_at
                self._db.execute(
                    "UPDATE tasks SET status = ?, updated_at = ?, data = ? WHERE id = ?",
                    (str(task.status), task.updated_at, task.model_dump_json(), task.id),
                )
                self._db.execute("COMMIT")
                return task.model_dump_json(), int(task.cancel_requested)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

        row = await self._run(claim)
        return None if row is None else self._load(row)

    async def requeue_running(self) -> builtins.list[str]:
        def requeue() -> list[str]:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                rows = self._db.execute(
                    "SELECT data, cancel_requested FROM tasks WHERE status = ?", (str(TaskStatus.RUNNING),)
                ).fetchall()
                ids = []
                for row in rows:
                    task = self._load(row)
                    task.status = TaskStatus.PENDING
                    task.resumed += 1
                    task.updated_at = time.time()
                    self._db.execute(
                        "UPDATE tasks SET status = ?, updated_at = ?, data = ? WHERE id = ?",
                        (str(task.status), task.updated_at, task.model_dump_json(), task.id),
                    )
                    ids.append(task.id)
                self._db.execute("COMMIT")
                return ids
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

        ids: builtins.list[str] = await self._run(requeue)
        return ids

    async def close(self) -> None:
        await self._run(self._db.close)
