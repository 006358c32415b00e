"""What each imported session has been through, so an interrupted import can finish.

An import has stages per session: its turns and session point are written (the session point
last, so a stored session is whole), its facts are extracted and stored, and with a model its
annotation is awaited in the background. The vector store alone cannot say which stage a
session reached (a session with no facts may simply have said nothing worth keeping), so each
finished stage is recorded here, in the state database, after the data it stands for is
written. Re-running an import then skips what is done and finishes what is missing; a crash
between writing and recording only makes the stage run again, and every stage is idempotent.

Model states: ``None`` (the rules decided; no model involved), ``queued`` (facts wait pending
for the model), ``done``, ``failed`` (every retry failed; ``/reannotate`` queues it again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import aiosqlite

from epmem.ingest.unread import Unread
from epmem.db import Database, Migration, MigrationSet, as_database

ModelState = Literal["queued", "done", "failed"]

MIGRATIONS = MigrationSet(
    "ingest_journal",
    (
        Migration(
            1,
            "import journal",
            """
        CREATE TABLE ingest_sessions (
            session_id TEXT PRIMARY KEY,
            source TEXT NOT NULL DEFAULT '',
            turns INTEGER NOT NULL DEFAULT 0,
            facts_done INTEGER NOT NULL DEFAULT 0,
            model TEXT,
            updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
        );
        CREATE INDEX ingest_sessions_model ON ingest_sessions(model)
        """,
        ),
        Migration(
            2,
            "statements the extractor could not turn into facts",
            """
        CREATE TABLE ingest_unread (
            session_id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            speaker TEXT NOT NULL,
            quote TEXT NOT NULL,
            reason TEXT NOT NULL,
            created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
            PRIMARY KEY (session_id, turn, quote)
        )
        """,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class SessionStage:
    session_id: str
    turns: int
    facts_done: bool
    model: ModelState | None


class ImportJournal:
    """One row per session, in the state database (whoever owns the connection applies
    :data:`MIGRATIONS`: bot/state.py)."""

    def __init__(self, db: Database | aiosqlite.Connection) -> None:
        self._conn = as_database(db)

    def _db(self) -> Database:
        return self._conn

    async def stages(self, session_ids: Sequence[str]) -> dict[str, SessionStage]:
        out: dict[str, SessionStage] = {}
        ids = list(session_ids)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in await self._db().fetchall(
                f"SELECT session_id, turns, facts_done, model FROM ingest_sessions WHERE session_id IN ({marks})",
                part,
            ):
                out[row[0]] = SessionStage(row[0], int(row[1]), bool(row[2]), row[3])
        return out

    async def turns_written(self, sessions: Sequence[tuple[str, str, int]]) -> None:
        """``(session_id, source, turns)`` for sessions whose turns are now stored."""
        await self._many(
            "INSERT INTO ingest_sessions(session_id, source, turns) VALUES (?, ?, ?) "
            "ON CONFLICT(session_id) DO UPDATE SET turns = excluded.turns, source = excluded.source, "
            "updated_at = CURRENT_TIMESTAMP",
            list(sessions),
        )

    async def facts_done(self, session_id: str, model: ModelState | None) -> None:
        await self._db().execute(
            "INSERT INTO ingest_sessions(session_id, facts_done, model) VALUES (?, 1, ?) "
            "ON CONFLICT(session_id) DO UPDATE SET facts_done = 1, model = excluded.model, "
            "updated_at = CURRENT_TIMESTAMP",
            (session_id, model),
        )

    async def set_model(self, session_ids: Sequence[str], state: ModelState) -> None:
        await self._many(
            "UPDATE ingest_sessions SET model = ?, updated_at = CURRENT_TIMESTAMP WHERE session_id = ?",
            [(state, sid) for sid in session_ids],
        )

    async def with_model(self, state: ModelState) -> list[str]:
        """Sessions in this model state, oldest first (the background annotator's queue)."""
        rows = await self._db().fetchall(
            "SELECT session_id FROM ingest_sessions WHERE model = ? ORDER BY updated_at, session_id", (state,)
        )
        return [row[0] for row in rows]

    async def model_counts(self) -> dict[str, int]:
        rows = await self._db().fetchall(
            "SELECT model, COUNT(*) FROM ingest_sessions WHERE model IS NOT NULL GROUP BY model"
        )
        return {row[0]: int(row[1]) for row in rows}

    async def forget(self, session_ids: Sequence[str]) -> None:
        await self._many("DELETE FROM ingest_sessions WHERE session_id = ?", [(sid,) for sid in session_ids])
        await self._many("DELETE FROM ingest_unread WHERE session_id = ?", [(sid,) for sid in session_ids])

    async def forget_all(self) -> None:
        """Every session's record and every unread statement (the owner's whole memory goes)."""
        await self._many("DELETE FROM ingest_sessions WHERE 1 = ?", [(1,)])
        await self._many("DELETE FROM ingest_unread WHERE 1 = ?", [(1,)])

    async def record_unread(self, session_id: str, unread: Sequence[Unread]) -> None:
        """The statements of this session the extractor could not turn into facts (its latest
        extraction: an earlier one's list is replaced)."""
        db = self._db()
        async with db.transaction():
            await db.execute("DELETE FROM ingest_unread WHERE session_id = ?", (session_id,))
            await db.executemany(
                "INSERT INTO ingest_unread(session_id, turn, speaker, quote, reason) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [(u.session_id, u.turn, u.speaker, u.quote, u.reason) for u in unread],
            )

    async def unread(self, limit: int | None = None) -> list[Unread]:
        """What no import could turn into a fact, oldest first (``epmem facts unread``)."""
        sql = "SELECT session_id, turn, speaker, quote, reason FROM ingest_unread ORDER BY created_at, session_id, turn"
        rows = await self._db().fetchall(sql + (f" LIMIT {int(limit)}" if limit is not None else ""))
        return [Unread(row[0], int(row[1]), row[2], row[3], row[4]) for row in rows]

    async def unread_count(self) -> int:
        row = await self._db().fetchone("SELECT COUNT(*) FROM ingest_unread")
        return int(row[0]) if row else 0

    async def clear_unread(self) -> int:
        """The owner has seen the list (``epmem facts unread --clear``): how many were cleared."""
        count = await self.unread_count()
        await self._db().execute("DELETE FROM ingest_unread")
        return count

    async def _many(self, sql: str, rows: list[tuple[object, ...]]) -> None:
        """One transaction for the whole batch (the connection is in autocommit mode)."""
        if not rows:
            return
        db = self._db()
        async with db.transaction():
            await db.executemany(sql, rows)
