"""PostgreSQL, for several workers serving owners from one server: psycopg 3, async.

One :class:`PostgresDatabase` is one connection, in autocommit like the SQLite one, to one
owner's tables: the URL names the database, and may name a schema (``?schema=ana``, this
program's parameter: :func:`epmem.db.base.with_schema`); every table name the code writes is
unqualified, so one owner's tables are that schema's (else the server's default search path). Statements go through psycopg's raw cursor, with
the ``?`` placeholders numbered (:func:`epmem.db.base.numbered`): ``%`` needs no escaping.

A write transaction first takes a transaction-scoped advisory lock keyed by the current schema
and the lock's name (:meth:`PostgresDatabase.transaction`): every writer of one owner's tables,
in any process, waits for the one before it, as on one SQLite file, and reads what it committed
(read committed: each statement sees what was committed before it began).

Needs the ``postgres`` extra (``pip install 'epmem-delegate[postgres]'``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg

from psycopg import sql as pgsql

from epmem.db.base import POSTGRES, WRITE_LOCK, Dialect, Row, numbered, split_schema

DIALECT = Dialect(POSTGRES)
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':' || ?::text, 0))"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class PostgresDatabase:
    """:class:`epmem.db.base.Database` over one psycopg async connection (autocommit)."""

    errors: tuple[type[Exception], ...] = (psycopg.Error,)

    def __init__(
        self, connection: psycopg.AsyncConnection[Any], url: str | None = None, readonly: bool = False
    ) -> None:
        self.connection = connection
        #: what :meth:`connect` was given: a connection found broken is made again from it.
        self._url, self._readonly = url, readonly
        #: times the connection was made again after the server dropped it.
        self.reconnects = 0
        #: transactions open on the connection: none is moved to a new one half done.
        self._transactions = 0

    @classmethod
    async def connect(cls, url: str, *, readonly: bool = False) -> PostgresDatabase:
        """Connect in autocommit; ``readonly``: every transaction is read-only (the audit page).
        A ``schema=`` in the URL (epmem.db.base.with_schema) is where the tables are: created
        if missing (unless ``readonly``), and the connection's search path."""
        db = cls(await cls._open(url, readonly), url, readonly)
        return db

    @classmethod
    async def _open(cls, url: str, readonly: bool) -> psycopg.AsyncConnection[Any]:
        plain, schema = split_schema(url)
        connection = await psycopg.AsyncConnection.connect(plain, autocommit=True)
        try:
            if schema is not None:
                await cls(connection)._use_schema(schema, create=not readonly)
            if readonly:
                await connection.execute("SET default_transaction_read_only = on")
        except BaseException:
            await connection.close()
            raise
        return connection

    async def _ready(self) -> None:
        """A connection the server dropped (a restart, a failover, an idle timeout) is made
        again before the next statement, never in the middle of one: a statement that fails
        because the connection broke under it is the caller's error (it may or may not have
        run), and only the next one, which certainly has not, goes to the new connection. Never
        inside a transaction: its statements all fail with it, none runs outside it."""
        if self._url is None or self._transactions or not (self.connection.closed or self.connection.broken):
            return
        self.connection = await self._open(self._url, self._readonly)
        self.reconnects += 1

    async def _use_schema(self, schema: str, create: bool) -> None:
        name = pgsql.Identifier(schema)
        if create:
            # IF NOT EXISTS is not safe against a worker creating it at the same instant: lock
            async with self.connection.transaction():
                await self.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended('epmem schema:' || ?::text, 0))", (schema,)
                )
                await self.connection.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        await self.connection.execute(pgsql.SQL("SET search_path TO {}").format(name))

    @property
    def dialect(self) -> Dialect:
        return DIALECT

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[psycopg.AsyncRawCursor[Any]]:
        """A cursor on a working connection (:meth:`_ready`): every statement goes through here."""
        await self._ready()
        async with psycopg.AsyncRawCursor(self.connection) as cur:
            yield cur

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        async with self._cursor() as cur:
            await cur.execute(numbered(sql), list(args))
            return cur.rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [list(r) for r in rows]
        if rows:
            async with self._cursor() as cur:
                await cur.executemany(numbered(sql), rows)

    async def fetchone(self, sql: str, args: Sequence[Any] = ()) -> Row | None:
        async with self._cursor() as cur:
            await cur.execute(numbered(sql), list(args))
            row = await cur.fetchone()
        return tuple(row) if row is not None else None

    async def fetchall(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        async with self._cursor() as cur:
            await cur.execute(numbered(sql), list(args))
            return [tuple(row) for row in await cur.fetchall()]

    async def fetchnamed(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        async with self._cursor() as cur:
            await cur.execute(numbered(sql), list(args))
            names = [d.name for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in await cur.fetchall()]

    async def iterate(self, sql: str, args: Sequence[Any] = ()) -> AsyncIterator[Row]:
        """Streamed (single-row mode): the result is never held whole, on either side."""
        async with self._cursor() as cur:
            async for row in cur.stream(numbered(sql), list(args)):
                yield tuple(row)

    @asynccontextmanager
    async def transaction(self, lock: str = WRITE_LOCK) -> AsyncIterator[None]:
        """BEGIN, then wait for the advisory lock of (this schema, ``lock``); it is released at
        COMMIT or ROLLBACK."""
        await self._ready()
        self._transactions += 1
        try:
            async with self.connection.transaction():
                await self.execute(_LOCK, (lock,))
                yield
        finally:
            self._transactions -= 1

    async def table_exists(self, name: str) -> bool:
        query = "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
        return await self.fetchone(query, (name,)) is not None

    async def scrub(self, *tables: str) -> bool:
        """``VACUUM FULL`` of ``tables``: rewritten into new files, the old ones unlinked. Then,
        where the role may (``pg_checkpoint`` and ``EXECUTE`` on ``pg_switch_wal``, or a
        superuser), the write-ahead log is moved on: a segment switch and checkpoints, after which
        a server with ``wal_recycle = off`` (and no archive, replication slot or ``wal_keep_size``
        holding segments) deletes the segments that held the old rows. True: all of that ran;
        False: the tables are rewritten, the log keeps the old row images until the server
        recycles it (docs/WORKERS.md says what to set). Base backups and replicas are beyond it."""
        for table in tables:
            if not _NAME.fullmatch(table):
                raise ValueError(f"not a table name: {table!r}")
        await self.execute("VACUUM (FULL) " + ", ".join(tables) if tables else "VACUUM (FULL)")
        try:
            for statement in ("CHECKPOINT", "SELECT pg_switch_wal()", "CHECKPOINT"):
                await self.execute(statement)
        except psycopg.errors.InsufficientPrivilege:
            return False
        return True

    async def close(self) -> None:
        await self.connection.close()
