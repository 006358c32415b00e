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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite

from epmem.sqlite import Migration, MigrationSet

from bot.clock import iso

MIGRATIONS = MigrationSet(
    "tasks",
    (
        Migration(
            1,
            "scheduled tasks",
            """
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
        """,
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

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db

    async def add(self, kind: str, due: datetime, payload: dict[str, Any]) -> int:
        cur = await self._db.execute(
            "INSERT INTO tasks(kind, due_at, payload) VALUES (?, ?, ?)", (kind, iso(due), json.dumps(payload))
        )
        return int(cur.lastrowid or 0)

    async def get(self, task_id: int) -> Task | None:
        async with self._db.execute(f"SELECT {_COLUMNS} FROM tasks WHERE id = ?", (task_id,)) as cur:
            row = await cur.fetchone()
        return _row(row) if row else None

    async def pending(self, kind: str | None = None) -> list[Task]:
        sql = f"SELECT {_COLUMNS} FROM tasks WHERE state = 'pending'"
        args: tuple[Any, ...] = ()
        if kind is not None:
            sql += " AND kind = ?"
            args = (kind,)
        async with self._db.execute(sql + " ORDER BY due_at, id", args) as cur:
            return [_row(r) async for r in cur]

    async def due(self, now: datetime) -> list[Task]:
        async with self._db.execute(
            f"SELECT {_COLUMNS} FROM tasks WHERE state = 'pending' AND due_at <= ? ORDER BY due_at, id", (iso(now),)
        ) as cur:
            return [_row(r) async for r in cur]

    async def finish(self, task_id: int, state: str, result: str, now: datetime) -> bool:
        """Close a pending task (``done``, ``failed``, ``cancelled``); False if it was not pending."""
        cur = await self._db.execute(
            "UPDATE tasks SET state = ?, result = ?, done_at = ? WHERE id = ? AND state = 'pending'",
            (state, result, iso(now), task_id),
        )
        return cur.rowcount == 1

    async def postpone(self, task_id: int, due: datetime, result: str) -> None:
        """Try again later (a failed attempt): bump the attempt count and move the due time."""
        await self._db.execute(
            "UPDATE tasks SET due_at = ?, attempts = attempts + 1, result = ? WHERE id = ? AND state = 'pending'",
            (iso(due), result, task_id),
        )
