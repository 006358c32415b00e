"""SQLite, the embedded default: one owner's file, opened through aiosqlite.

:class:`SQLiteDatabase` runs the very statements the tables' code ran on the aiosqlite
connection before the :class:`epmem.db.base.Database` seam existed: the same connection
settings (WAL, foreign keys, a busy timeout), ``BEGIN IMMEDIATE`` for a write transaction, the
same placeholders. The connection itself stays reachable (:attr:`SQLiteDatabase.connection`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from epmem.db.base import SQLITE, WRITE_LOCK, Database, Dialect, Row

DIALECT = Dialect(SQLITE)


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


async def connect_readonly(path: Path) -> aiosqlite.Connection:
    """A reader beside the process that owns the file: WAL lets it read while the owner writes,
    and ``mode=ro`` with ``query_only`` makes sure it never writes (nor migrates) anything."""
    if not path.exists():
        raise sqlite3.OperationalError(f"no database at {path}")
    db = await aiosqlite.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        await db.execute("PRAGMA busy_timeout=5000")
        await db.execute("PRAGMA query_only=ON")
    except sqlite3.DatabaseError:
        await db.close()
        raise
    return db


async def scrub(db: aiosqlite.Connection) -> bool:
    """Make deletions physical: vacuum into fresh pages, then fold the WAL into the file and
    truncate it (old page images of deleted rows live on in the WAL until then). A reader on an
    old snapshot can hold the checkpoint back; it is tried twice. True when the WAL is empty."""
    await db.execute("VACUUM")
    for _ in range(2):
        async with db.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cur:
            row = await cur.fetchone()
        if row is not None and row[0] == 0:
            return True
    return False


def as_database(db: Database | aiosqlite.Connection) -> Database:
    """The seam over ``db``: a bare aiosqlite connection (a test's, or a caller written before
    the seam) is wrapped; a :class:`Database` is itself."""
    return SQLiteDatabase(db) if isinstance(db, aiosqlite.Connection) else db


class SQLiteDatabase:
    """:class:`epmem.db.base.Database` over one aiosqlite connection (opened in autocommit)."""

    errors: tuple[type[Exception], ...] = (sqlite3.DatabaseError,)

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self.connection = connection

    @property
    def dialect(self) -> Dialect:
        return DIALECT

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        async with self.connection.execute(sql, args) as cur:
            return cur.rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self.connection.executemany(sql, rows)

    async def fetchone(self, sql: str, args: Sequence[Any] = ()) -> Row | None:
        async with self.connection.execute(sql, args) as cur:
            row = await cur.fetchone()
        return tuple(row) if row is not None else None

    async def fetchall(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        async with self.connection.execute(sql, args) as cur:
            return [tuple(row) for row in await cur.fetchall()]

    async def fetchnamed(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        async with self.connection.execute(sql, args) as cur:
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in await cur.fetchall()]

    async def iterate(self, sql: str, args: Sequence[Any] = ()) -> AsyncIterator[Row]:
        async with self.connection.execute(sql, args) as cur:
            async for row in cur:
                yield tuple(row)

    @asynccontextmanager
    async def transaction(self, lock: str = WRITE_LOCK) -> AsyncIterator[None]:
        """``BEGIN IMMEDIATE``: the file's one write lock, whatever ``lock`` names."""
        await self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
            await self.connection.execute("COMMIT")
        except BaseException:
            if self.connection.in_transaction:
                await self.connection.execute("ROLLBACK")
            raise

    async def table_exists(self, name: str) -> bool:
        return await self.fetchone("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)) is not None

    async def scrub(self, *tables: str) -> bool:
        """The whole file, whichever tables: see :func:`scrub`."""
        return await scrub(self.connection)

    async def close(self) -> None:
        await self.connection.close()
