"""SQLite plumbing shared by every table the library owns: connections and migrations.

Migrations are recorded in a ``migrations`` table and each one runs in its own transaction,
so a half-applied schema can never be left behind (the sqlite-utils way).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import aiosqlite


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


async def connect(path: Path) -> aiosqlite.Connection:
    """Open with autocommit off-by-hand (isolation_level=None) so our BEGINs are explicit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = await aiosqlite.connect(str(path), isolation_level=None)
    try:
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA foreign_keys=ON")
        await db.execute("PRAGMA busy_timeout=5000")
    except sqlite3.DatabaseError:
        await db.close()
        raise
    return db


async def migrate(db: aiosqlite.Connection, migrations: list[Migration], table: str = "migrations") -> int:
    """Apply the migrations not yet recorded in ``table``; return the schema version."""
    await db.execute(
        f"CREATE TABLE IF NOT EXISTS {table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
    )
    async with db.execute(f"SELECT COALESCE(MAX(version), 0) FROM {table}") as cur:
        row = await cur.fetchone()
    current = int(row[0]) if row else 0
    for m in sorted(migrations, key=lambda m: m.version):
        if m.version <= current:
            continue
        await db.execute("BEGIN IMMEDIATE")
        try:
            for statement in filter(str.strip, m.sql.split(";")):
                await db.execute(statement)
            await db.execute(f"INSERT INTO {table}(version, name) VALUES (?, ?)", (m.version, m.name))
            await db.execute("COMMIT")
        except BaseException:
            await db.execute("ROLLBACK")
            raise
        current = m.version
    return current
