"""What the tables' code asks of a database, whichever one it is: the :class:`Database` protocol.

The code that owns tables writes its SQL once, with ``?`` placeholders, and runs it through
this seam: :class:`epmem.db.lite.SQLiteDatabase` (the embedded default, one owner, one file)
or :class:`epmem.db.postgres.PostgresDatabase` (several workers on one server). What differs
between the two is said in one place each:

* placeholders: ``?`` everywhere; :func:`numbered` turns them into PostgreSQL's ``$1, $2...``;
* writing: :meth:`Database.transaction` is ``BEGIN IMMEDIATE`` on SQLite (one writer per file)
  and, on PostgreSQL, a transaction that first takes an advisory lock named for the schema,
  so the writers of one owner's tables queue as they do on one file;
* the few expressions with no common spelling: :class:`Dialect`;
* a schema change that cannot be written portably: a migration's ``postgres`` text
  (:class:`Migration`).

A row is a plain tuple on both.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import quote, unquote

from epmem.errors import EpmemError

Row = tuple[Any, ...]
SQLITE, POSTGRES = "sqlite", "postgres"
#: the lock every writer of one schema takes (the file's write lock, on SQLite).
WRITE_LOCK = "write"


class DatabaseError(EpmemError, RuntimeError):
    """A database that cannot be used: not SQLite, damaged, or written by a newer version."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    #: the same change in PostgreSQL's words, where ``sql`` is not portable (AUTOINCREMENT,
    #: BLOB, WITHOUT ROWID, SQLite's JSON functions); None: ``sql`` runs on both.
    postgres: str | None = None

    def text(self, dialect: str) -> str:
        return self.postgres if dialect == POSTGRES and self.postgres is not None else self.sql


@dataclass(frozen=True, slots=True)
class MigrationSet:
    """The migrations of one part's tables, in version order."""

    name: str
    migrations: tuple[Migration, ...]
    #: where this set recorded its versions before ``schema_migrations`` existed (SQLite files only).
    legacy_table: str | None = None


@dataclass(frozen=True, slots=True)
class Dialect:
    """The expressions spelled differently on each database."""

    name: str

    def find(self, haystack: str, needle: str) -> str:
        """The 1-based position of ``needle`` in ``haystack``, 0 when absent."""
        return f"{'instr' if self.name == SQLITE else 'strpos'}({haystack}, {needle})"

    def json_missing(self, column: str, key: str) -> str:
        """True when the JSON text in ``column`` has no top-level ``key`` (a JSON null is there)."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"not a plain JSON key: {key!r}")
        if self.name == SQLITE:
            return f"json_type({column}, '$.{key}') IS NULL"
        return f"({column}::jsonb -> '{key}') IS NULL"


class Database(Protocol):
    """One connection to one owner's tables. Statements run in autocommit unless inside
    :meth:`transaction`; concurrent callers of one connection share whatever transaction is
    open on it (as with one aiosqlite connection), so a writer serialises its own tasks."""

    @property
    def dialect(self) -> Dialect: ...

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed (-1 when the driver cannot say)."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def fetchone(self, sql: str, args: Sequence[Any] = ()) -> Row | None: ...

    async def fetchall(self, sql: str, args: Sequence[Any] = ()) -> list[Row]: ...

    async def fetchnamed(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Every row as a mapping of its column names (read by name, so a migration that adds
        or drops a column cannot shift what a field reads)."""
        ...

    def iterate(self, sql: str, args: Sequence[Any] = ()) -> AsyncIterator[Row]:
        """The rows one by one, never all held at once (a whole table's ledger lines): read it
        to the end, and run nothing else on this connection meanwhile."""
        ...

    def transaction(self, lock: str = WRITE_LOCK) -> AbstractAsyncContextManager[None]:
        """A write transaction, committed on leaving, rolled back on any exception."""
        ...

    async def table_exists(self, name: str) -> bool: ...

    async def scrub(self, *tables: str) -> bool:
        """Make deletions physical as far as the database can (see each implementation)."""
        ...

    async def close(self) -> None: ...


_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\?", re.S)


@lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """``?`` placeholders as PostgreSQL's ``$1, $2...``; a ``?`` inside a string literal, a
    quoted name or a comment stays what it is."""
    n = 0

    def number(match: re.Match[str]) -> str:
        nonlocal n
        if match.group(0) != "?":
            return match.group(0)
        n += 1
        return f"${n}"

    return _TOKENS.sub(number, sql)


def is_postgres_url(target: object) -> bool:
    """A ``postgresql://`` (or ``postgres://``) URL names a server; anything else is a file."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


#: the URL parameter naming the schema of one owner's tables: this program's, not libpq's (it is
#: taken out before connecting; epmem.db.postgres creates the schema on first use).
SCHEMA_PARAM = "schema"


def split_schema(url: str) -> tuple[str, str | None]:
    """The URL without its ``schema=`` parameter, and the schema it named (None: none)."""
    base, _, query = url.partition("?")
    kept, schema = [], None
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        if key == SCHEMA_PARAM:
            schema = unquote(value) or None
        else:
            kept.append(item)
    return (f"{base}?{'&'.join(kept)}" if kept else base), schema


def with_schema(url: str, schema: str) -> str:
    """The URL naming ``schema`` for the tables (under the schema it already names, if any:
    ``owners`` and ``ana`` make ``owners_ana``)."""
    base, given = split_schema(url)
    name = f"{given}_{schema}" if given else schema
    return f"{base}{'&' if '?' in base else '?'}{SCHEMA_PARAM}={quote(name, safe='')}"
