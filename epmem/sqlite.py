"""SQLite plumbing shared by every table still written on an aiosqlite connection.

The migrations runner, the connection settings and the scrub live in :mod:`epmem.db` (the seam
that also speaks PostgreSQL); this module keeps the aiosqlite surface the state database's
tables use: :func:`open_database` connects and migrates a file and hands back the aiosqlite
connection, :func:`migrate` applies sets on one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import aiosqlite

from epmem.db.base import DatabaseError, Migration, MigrationSet
from epmem.db.lite import SQLiteDatabase, connect, connect_readonly, scrub
from epmem.db.migrate import TABLE
from epmem.db.migrate import migrate as migrate_database

__all__ = [
    "TABLE",
    "DatabaseError",
    "Migration",
    "MigrationSet",
    "connect",
    "connect_readonly",
    "migrate",
    "open_database",
    "scrub",
]


async def migrate(db: aiosqlite.Connection, *sets: MigrationSet) -> dict[str, int]:
    """Apply every set's migrations not yet recorded; return each set's schema version."""
    return await migrate_database(SQLiteDatabase(db), *sets)


async def open_database(path: Path, sets: Sequence[MigrationSet], what: str = "database") -> aiosqlite.Connection:
    """Connect and migrate; a file that is not a usable SQLite database is one clear error
    naming it (and the file is left as it was)."""
    db: aiosqlite.Connection | None = None
    try:
        db = await connect(path)
        await migrate(db, *sets)
    except sqlite3.DatabaseError as exc:
        if db is not None:
            await db.close()
        raise DatabaseError(f"{what} {path} is corrupted: {exc}") from None
    except DatabaseError as exc:
        if db is not None:
            await db.close()
        raise DatabaseError(f"{what} {path}: {exc}") from None
    return db
