"""SQLite plumbing shared by every table: connections, and one migrations table keyed by set.

Each part that owns tables (the overlay, the audit log, held replies, tasks...) declares a
:class:`MigrationSet`. Whoever owns a database file opens it with :func:`open_database`, which
applies every set's pending migrations, each in its own transaction and recorded in one
``schema_migrations`` table as ``(migration_set, version)``: a half-applied schema can never be
left behind, and the sets sharing a file never collide (the sqlite-utils way).

Files written before this table existed recorded each set in a table of its own
(``overlay_migrations``, ``migrations``...); a set names that ``legacy_table`` and its rows are
moved over, in one transaction, the first time the file is opened.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from epmem.errors import EpmemError

TABLE = "schema_migrations"


class DatabaseError(EpmemError, RuntimeError):
    """A database file that cannot be used: not SQLite, damaged, or written by a newer version."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


@dataclass(frozen=True, slots=True)
class MigrationSet:
    """The migrations of one part's tables, in version order."""

    name: str
    migrations: tuple[Migration, ...]
    #: where this set recorded its versions before ``schema_migrations`` existed.
    legacy_table: str | None = None


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


async def _exists(db: aiosqlite.Connection, table: str) -> bool:
    async with db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)) as cur:
        return await cur.fetchone() is not None


async def _adopt_legacy(db: aiosqlite.Connection, migration_set: MigrationSet) -> None:
    legacy = migration_set.legacy_table
    if legacy is None or not await _exists(db, legacy):
        return
    await db.execute("BEGIN IMMEDIATE")
    try:
        await db.execute(
            f"INSERT OR IGNORE INTO {TABLE}(migration_set, version, name, applied_at) "
            f"SELECT ?, version, name, applied_at FROM {legacy}",
            (migration_set.name,),
        )
        await db.execute(f"DROP TABLE {legacy}")
        await db.execute("COMMIT")
    except BaseException:
        await db.execute("ROLLBACK")
        raise


async def migrate(db: aiosqlite.Connection, *sets: MigrationSet) -> dict[str, int]:
    """Apply every set's migrations not yet recorded; return each set's schema version."""
    await db.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} (migration_set TEXT NOT NULL, version INTEGER NOT NULL, "
        "name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, "
        "PRIMARY KEY (migration_set, version))"
    )
    versions: dict[str, int] = {}
    for migration_set in sets:
        await _adopt_legacy(db, migration_set)
        async with db.execute(
            f"SELECT COALESCE(MAX(version), 0) FROM {TABLE} WHERE migration_set = ?", (migration_set.name,)
        ) as cur:
            row = await cur.fetchone()
        current = int(row[0]) if row else 0
        known = max((m.version for m in migration_set.migrations), default=0)
        if current > known:
            raise DatabaseError(
                f"its {migration_set.name} tables are at version {current}, newer than this "
                f"program knows ({known}): upgrade epmem"
            )
        for m in sorted(migration_set.migrations, key=lambda m: m.version):
            if m.version <= current:
                continue
            await db.execute("BEGIN IMMEDIATE")
            try:
                for statement in filter(str.strip, m.sql.split(";")):
                    await db.execute(statement)
                await db.execute(
                    f"INSERT INTO {TABLE}(migration_set, version, name) VALUES (?, ?, ?)",
                    (migration_set.name, m.version, m.name),
                )
                await db.execute("COMMIT")
            except BaseException:
                await db.execute("ROLLBACK")
                raise
            current = m.version
        versions[migration_set.name] = current
    return versions


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
