"""The fact register: a copy of each fact's annotations that the audit page can read.

The facts themselves live in the vector store, which one process holds at a time (Qdrant Edge
locks the data folder), so the audit page cannot open it beside the running bot. The bot keeps
this register in the state database instead, as its memory changes (it listens to
:class:`epmem.memory.recall.FactMemory`) and in full at every start; the page reads it
read-only, with the policy and the owner's exceptions, and runs the calculus over it.

It holds the fact's text, so the owner sees what a row is about; /forget removes the row with
the fact (the memory tells the register) and the state database is then vacuumed.
"""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from epmem.memory.facts import Fact
from epmem.db import Database, Migration, MigrationSet, as_database

MIGRATIONS = MigrationSet(
    "fact_register",
    (
        Migration(
            1,
            "fact register",
            """
        CREATE TABLE fact_register (
            id TEXT PRIMARY KEY,
            event_id TEXT NOT NULL,
            body TEXT NOT NULL
        );
        CREATE INDEX fact_register_event ON fact_register(event_id)
        """,
        ),
    ),
)


def _row(f: Fact) -> tuple[str, str, str]:
    return f.id, f.event_id, f.model_copy(update={"source_turns": []}).model_dump_json()


class FactRegister:
    """On the state database's connection (the bot's, read-write; the audit page's, read-only).
    Its tables come with the state database's migration sets (bot/state.py)."""

    def __init__(self, db: Database | aiosqlite.Connection) -> None:
        self.db = as_database(db)

    async def sync(self, facts: Sequence[Fact]) -> None:
        """Make the register exactly these facts (at start: whatever changed while it was off)."""
        db = self.db
        async with db.transaction():
            await db.execute("DELETE FROM fact_register")
            await db.executemany(
                "INSERT INTO fact_register(id, event_id, body) VALUES (?,?,?)", [_row(f) for f in facts]
            )

    async def facts_changed(self, upserted: Sequence[Fact], removed: Sequence[str], cleared: bool) -> None:
        db = self.db
        if cleared:
            await db.execute("DELETE FROM fact_register")
        if removed:
            await db.executemany("DELETE FROM fact_register WHERE id = ?", [(r,) for r in removed])
        if upserted:
            await db.executemany(
                "INSERT INTO fact_register(id, event_id, body) VALUES (?,?,?) ON CONFLICT(id) DO UPDATE SET "
                "event_id = excluded.event_id, body = excluded.body",
                [_row(f) for f in upserted],
            )

    async def all(self) -> list[Fact]:
        return [Fact.model_validate_json(row[0]) for row in await self.db.fetchall("SELECT body FROM fact_register")]

    async def keys(self, words: Sequence[str] = ()) -> list[tuple[str, str]]:
        """(event id, fact id) of the facts whose annotation or text has every word (any case)."""
        found = self.db.dialect.find("lower(body)", "?")
        where = " AND ".join(f"{found} > 0" for _ in words)
        sql = "SELECT event_id, id FROM fact_register" + (f" WHERE {where}" if where else "")
        return [(row[0], row[1]) for row in await self.db.fetchall(sql, [w.casefold() for w in words])]

    async def facts(self, ids: Sequence[str]) -> list[Fact]:
        out: list[Fact] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = await self.db.fetchall(f"SELECT body FROM fact_register WHERE id IN ({marks})", chunk)
            out += [Fact.model_validate_json(row[0]) for row in rows]
        return out
