"""One migrations table keyed by set, on either database; and opening a database by path or URL.

Each part that owns tables (the overlay, the audit log, held replies, tasks...) declares a
:class:`epmem.db.base.MigrationSet`. Whoever owns the tables opens them with
:func:`open_database`, which applies every set's pending migrations, each in its own write
transaction and recorded in one ``schema_migrations`` table as ``(migration_set, version)``: a
half-applied schema can never be left behind, and the sets sharing a database never collide
(the sqlite-utils way). The version is read again inside each migration's transaction, so two
workers starting at once on one PostgreSQL schema apply each migration once.

SQLite files written before this table existed recorded each set in a table of its own
(``overlay_migrations``, ``migrations``...); a set names that ``legacy_table`` and its rows are
moved over, in one transaction, the first time the file is opened.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from epmem.db.base import Database, DatabaseError, MigrationSet, is_postgres_url
from epmem.db.lite import SQLiteDatabase, connect, connect_readonly

TABLE = "schema_migrations"


async def _adopt_legacy(db: Database, migration_set: MigrationSet) -> None:
    legacy = migration_set.legacy_table
    if legacy is None or not await db.table_exists(legacy):
        return
    async with db.transaction():
        await db.execute(  # only SQLite files have such tables
            f"INSERT OR IGNORE INTO {TABLE}(migration_set, version, name, applied_at) "
            f"SELECT ?, version, name, applied_at FROM {legacy}",
            (migration_set.name,),
        )
        await db.execute(f"DROP TABLE {legacy}")


async def _version(db: Database, migration_set: MigrationSet) -> int:
    row = await db.fetchone(
        f"SELECT COALESCE(MAX(version), 0) FROM {TABLE} WHERE migration_set = ?", (migration_set.name,)
    )
    return int(row[0]) if row else 0


async def migrate(db: Database, *sets: MigrationSet) -> dict[str, int]:
    """Apply every set's migrations not yet recorded; return each set's schema version."""
    async with db.transaction():
        await db.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (migration_set TEXT NOT NULL, version INTEGER NOT NULL, "
            "name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, "
            "PRIMARY KEY (migration_set, version))"
        )
    versions: dict[str, int] = {}
    for migration_set in sets:
        await _adopt_legacy(db, migration_set)
        current = await _version(db, migration_set)
        known = max((m.version for m in migration_set.migrations), default=0)
        if current > known:
            raise DatabaseError(
                f"its {migration_set.name} tables are at version {current}, newer than this "
                f"program knows ({known}): upgrade epmem"
            )
        for m in sorted(migration_set.migrations, key=lambda m: m.version):
            if m.version <= current:
                continue
            async with db.transaction():
                current = await _version(db, migration_set)  # another worker may have been first
                if m.version <= current:
                    continue
                for statement in filter(str.strip, m.text(db.dialect.name).split(";")):
                    await db.execute(statement)
                await db.execute(
                    f"INSERT INTO {TABLE}(migration_set, version, name) VALUES (?, ?, ?)",
                    (migration_set.name, m.version, m.name),
                )
            current = m.version
        versions[migration_set.name] = current
    return versions


def redacted(url: str) -> str:
    """A URL as an error may show it: without its password."""
    return re.sub(r"//([^:@/]*):[^@/]*@", r"//\1@", url)


async def connect_to(target: Path | str, *, readonly: bool = False) -> Database:
    """A :class:`Database` for a file path (SQLite) or a ``postgresql://`` URL, not migrated.
    ``readonly``: it never writes (a reader beside the process that owns the tables)."""
    if is_postgres_url(target):
        from epmem.db.postgres import PostgresDatabase

        return await PostgresDatabase.connect(str(target), readonly=readonly)
    path = Path(target)
    return SQLiteDatabase(await (connect_readonly(path) if readonly else connect(path)))


def driver_errors(target: Path | str) -> tuple[type[Exception], ...]:
    """What the driver for ``target`` raises for a database it cannot use."""
    if is_postgres_url(target):
        from epmem.db.postgres import PostgresDatabase

        return PostgresDatabase.errors
    return SQLiteDatabase.errors


async def open_database(target: Path | str, sets: Sequence[MigrationSet], what: str = "database") -> Database:
    """Connect and migrate; a database that cannot be used is one clear error naming it (and a
    file is left as it was)."""
    where = redacted(target) if isinstance(target, str) and is_postgres_url(target) else str(target)
    db: Database | None = None
    try:
        db = await connect_to(target)
        await migrate(db, *sets)
    except DatabaseError as exc:
        if db is not None:
            await db.close()
        raise DatabaseError(f"{what} {where}: {exc}") from None
    except driver_errors(target) as exc:
        if db is not None:
            await db.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise DatabaseError(f"{what} {where} is corrupted: {exc}") from None
        raise DatabaseError(f"{what} {where}: {exc}") from None
    return db
