"""Scheduled work, kept in SQLite: the source of truth the scheduler rebuilds its jobs from.

APScheduler's own job stores need picklable module-level callables and lose nothing we could
not rebuild, so the durable record of "what must happen when" lives here, in the state database
next to the overlay, and the in-process scheduler is only an alarm clock over these rows.

Kinds: ``command`` (an owner command to run later, e.g. an embargo ``/level f12 3``),
``digest`` (the owner's daily digest) and ``annotation_retry`` (a hook for the annotator).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite

from epmem.db import IDENTITY, Database, Migration, MigrationSet, as_database, ported

from bot.clock import iso

_TASKS_V1 = """
        CREATE TABLE tasks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            due_at TEXT NOT NULL,
            payload TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
            done_at TEXT,
            result TEXT
        );
        CREATE INDEX tasks_pending ON tasks(state, due_at)
        """

MIGRATIONS = MigrationSet(
    "tasks",
    (
        Migration(
            1,
            "scheduled tasks",
            _TASKS_V1,
            postgres=ported(_TASKS_V1, IDENTITY, ("due_at TEXT NOT NULL", 'due_at TEXT COLLATE "C" NOT NULL')),
        ),
    ),
    legacy_table="task_migrations",
)


@dataclass(frozen=True, slots=True)
class Task:
    id: int
    kind: str
    due_at: datetime
    payload: dict[str, Any]
    state: str
    attempts: int
    result: str | None = None


def _row(row: Sequence[Any]) -> Task:
    return Task(row[0], row[1], datetime.fromisoformat(row[2]), json.loads(row[3]), row[4], row[5], row[6])


_COLUMNS = "id, kind, due_at, payload, state, attempts, result"


class Tasks:
    """The task table, in the state database (bot/state.py owns the connection)."""

    def __init__(self, db: Database | aiosqlite.Connection) -> None:
        self._db = as_database(db)

    async def add(self, kind: str, due: datetime, payload: dict[str, Any]) -> int:
        row = await self._db.fetchone(
            "INSERT INTO tasks(kind, due_at, payload) VALUES (?, ?, ?) RETURNING id",
            (kind, iso(due), json.dumps(payload)),
        )
        return int(row[0]) if row else 0

    async def get(self, task_id: int) -> Task | None:
        row = await self._db.fetchone(f"SELECT {_COLUMNS} FROM tasks WHERE id = ?", (task_id,))
        return _row(row) if row else None

    async def pending(self, kind: str | None = None) -> list[Task]:
        sql = f"SELECT {_COLUMNS} FROM tasks WHERE state = 'pending'"
        args: tuple[Any, ...] = ()
        if kind is not None:
            sql += " AND kind = ?"
            args = (kind,)
        return [_row(r) for r in await self._db.fetchall(sql + " ORDER BY due_at, id", args)]

    async def due(self, now: datetime) -> list[Task]:
        sql = f"SELECT {_COLUMNS} FROM tasks WHERE state = 'pending' AND due_at <= ? ORDER BY due_at, id"
        return [_row(r) for r in await self._db.fetchall(sql, (iso(now),))]

    async def finish(self, task_id: int, state: str, result: str, now: datetime) -> bool:
        """Close a pending task (``done``, ``failed``, ``cancelled``); False if it was not pending."""
        changed = await self._db.execute(
            "UPDATE tasks SET state = ?, result = ?, done_at = ? WHERE id = ? AND state = 'pending'",
            (state, result, iso(now), task_id),
        )
        return changed == 1

    async def claim(self, task: Task, until: datetime) -> bool:
        """Take a due task for one run among several workers: its due time moves to ``until``
        only for the worker whose view of it is still current (a compare-and-set), so exactly
        one runs it; should that worker die mid-run, the task is due again at ``until``."""
        changed = await self._db.execute(
            "UPDATE tasks SET due_at = ? WHERE id = ? AND state = 'pending' AND due_at = ?",
            (iso(until), task.id, iso(task.due_at)),
        )
        return changed == 1

    def ensuring(self) -> AbstractAsyncContextManager[None]:
        """Around a look-then-add (the one pending digest): under the tasks' lock, so workers
        starting together add one between them."""
        return self._db.transaction("tasks")

    async def postpone(self, task_id: int, due: datetime, result: str) -> None:
        """Try again later (a failed attempt): bump the attempt count and move the due time."""
        await self._db.execute(
            "UPDATE tasks SET due_at = ?, attempts = attempts + 1, result = ? WHERE id = ? AND state = 'pending'",
            (iso(due), result, task_id),
        )
