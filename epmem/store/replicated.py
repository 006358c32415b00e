"""A vector store several workers share: a log of writes in a database, a local replica each.

No Qdrant server can run here, and Qdrant Edge belongs to one process (one folder, one lock), so
workers sharing one owner's memory share it through the database they already share (PostgreSQL;
SQLite works too, several processes can share its file). The ``vector_log`` table is the truth:
every write appends rows to it in ``db.transaction("vectors")``; each worker's Edge folder is a
replica, which catches up (applies every row after its watermark, in ``seq`` order) before it
answers a read and after each write. The watermark is kept in a small JSON file in the replica's
folder (per owner), written after each applied batch: a restarted worker resumes where it was, a
fresh folder replays from 0. Replaying rows already applied (a crash between applying them and
writing the watermark) is harmless: every row sets a key's state, deletes keys, or deletes by a
condition (a filter applied twice filters once), so the replica ends where it would have.

**Why no row is ever skipped.** A replica reads ``seq > watermark`` and moves the watermark to
the highest seq it applied; that is sound only if no row with a lower seq can become visible
later. Every writer draws its seq (the identity / AUTOINCREMENT value, drawn by the INSERT)
inside the write transaction, after taking the lock (PostgreSQL's advisory lock on this schema
and "vectors", released only once the commit is visible; SQLite's one write lock): writers commit
one after the other, each drawing seqs above every seq committed before it. So whenever a reader
sees seq ``s``, every lower seq was committed (and is visible to that same statement) or rolled
back (a gap that stays a gap). The PostgreSQL identity has ``CACHE 1``: with a per-session cache
two sessions would draw interleaved blocks, out of commit order. Gaps left by compaction (rows
deleted below) do not matter for the same reason: the reader asks for what is above its mark.

**Compact, and erasure.** The log keeps only what a newcomer needs: an upsert of a key deletes
that key's earlier upsert rows; ``delete`` deletes the keys' upsert rows and leaves one tombstone
(the keys), ``delete_where`` the matching keys' upsert rows and a tombstone (the condition);
``drop_collection`` every row of the collection and a tombstone. A replica that was down during
an erasure therefore never receives the erased payload: its rows are gone, it applies only the
tombstone (to points it may already hold). :meth:`ReplicatedStore.compact` compacts the replica
and scrubs the table (``VACUUM FULL`` / SQLite ``VACUUM`` + WAL truncation), so no byte of a
deleted payload remains in the table's files (PostgreSQL's own WAL and backups aside: see
docs/POSTGRES.md). ``delete_where`` picks the rows to delete with the engine itself: under the
log's lock the replica catches up to the whole log, and its scroll of ``where`` gives exactly the
keys the engine (and so every replica applying the tombstone) deletes, with Qdrant's matching
rules (a list payload matches any element, a list condition any value, types strict), no second
implementation of them to drift. Tombstones are never pruned: one that every replica has passed
could be, once replicas record their watermarks in the database; not needed yet.

**Cost.** A read when nothing changed costs one indexed query (``owner, seq > ?``) that returns
no rows; a write costs its transaction and then reads its own rows back as a catch-up (so local
state only ever comes from the log, in log order). ``delete_where`` also catches up inside the
lock (its keys come from the replica). Catch-up is serialised within a process (one asyncio lock, which
also keeps the process's tasks off each other's transactions on the shared connection).

Rows are per owner (``owner`` column), as the engines scope points to an owner; a replica applies
only its owner's rows. Dense vectors are stored as little-endian float32 bytes, sparse vectors and
payloads as JSON. A folder that already held points before it became a replica keeps them (the
log never heard of them). A folder that no longer follows the log (moved to another log
database, or the log recreated or restored from an older backup) must be emptied and rebuilt:
:class:`ReplicaDiverged` says so (the watermark file names the log's random id, and a mark beyond
the log's end is refused) rather than replaying part of the log over the wrong points.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from epmem.db.base import Database, Migration, MigrationSet, Row, ported
from epmem.db.migrate import migrate, open_database
from epmem.errors import EpmemError
from epmem.store.base import Hit, Hybrid, PointIn, SparseVec, StoreMismatch, VectorStore, Where

TABLE = "vector_log"
#: one row: the log's random id, which a replica's watermark file names (a folder moved to another
#: log, or a log created anew under it, is then told, not silently half-replayed).
META = "vector_log_meta"
#: the advisory lock (PostgreSQL) every writer of the log takes; SQLite has one write lock.
LOCK = "vectors"
#: the replica's watermarks, one per owner, in its folder.
WATERMARK_FILE = "replica-watermark.json"
#: rows applied per fetch: a fresh replica replaying 100k points never holds them all at once.
BATCH = 500
#: keys per ``IN (...)`` list (SQLite's bound-parameter limit is far above).
_CHUNK = 500

_V1 = f"""
            CREATE TABLE {TABLE} (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                owner TEXT NOT NULL,
                collection TEXT NOT NULL,
                op TEXT NOT NULL,
                key TEXT,
                body TEXT NOT NULL,
                dense BLOB,
                sparse TEXT
            );
            CREATE INDEX vector_log_owner ON {TABLE}(owner, seq);
            CREATE INDEX vector_log_key ON {TABLE}(owner, collection, key);
            CREATE TABLE {META} (log_id TEXT NOT NULL);
            INSERT INTO {META}(log_id) VALUES (lower(hex(randomblob(16))))
            """

MIGRATIONS = MigrationSet(
    TABLE,
    (
        Migration(
            1,
            "vector log",
            _V1,
            # CACHE 1: every session draws the next seq, in commit order (the module doc)
            postgres=ported(
                _V1,
                (
                    "seq INTEGER PRIMARY KEY AUTOINCREMENT",
                    "seq BIGINT GENERATED ALWAYS AS IDENTITY (CACHE 1) PRIMARY KEY",
                ),
                ("dense BLOB", "dense BYTEA"),
                ("lower(hex(randomblob(16)))", "replace(gen_random_uuid()::text, '-', '')"),
            ),
        ),
    ),
)

INSERT = f"INSERT INTO {TABLE}(owner, collection, op, key, body, dense, sparse) VALUES (?, ?, ?, ?, ?, ?, ?)"
_ROWS = f"SELECT seq, collection, op, key, body, dense, sparse FROM {TABLE} WHERE owner = ? AND seq > ? ORDER BY seq LIMIT ?"
_ENSURED = f"SELECT body FROM {TABLE} WHERE owner = ? AND collection = ? AND op = 'ensure'"


class ReplicaDiverged(EpmemError, RuntimeError):
    """A replica's folder does not follow this log: it replicates another one, or it has applied
    rows the log no longer has (a log restored from an older backup)."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def log_row(owner: str, collection: str, point: PointIn) -> tuple[Any, ...]:
    """The :data:`INSERT` arguments of one upserted point."""
    dense = None if point.dense is None else np.asarray(point.dense, dtype="<f4").tobytes()
    sparse = None
    if point.sparse is not None:  # numbers as JSON knows them (an encoder may hand numpy scalars)
        sparse = _json([[int(i) for i in point.sparse.indices], [float(v) for v in point.sparse.values]])
    return (owner, collection, "upsert", point.key, _json(point.payload), dense, sparse)


def _point(key: str, body: str, dense: Any, sparse: str | None) -> PointIn:
    vector = None if dense is None else np.frombuffer(bytes(dense), dtype="<f4").astype(np.float32)
    pair = None if sparse is None else json.loads(sparse)
    return PointIn(key, json.loads(body), vector, None if pair is None else SparseVec(pair[0], pair[1]))


class ReplicatedStore:
    """:class:`VectorStore` whose truth is the ``vector_log`` table, ``local`` its replica.

    ``log``: a connected :class:`Database` (the caller's, left open by :meth:`close`), or a path
    or ``postgresql://`` URL, connected and migrated on first use and closed by :meth:`close`
    (so the store can be made without awaiting, as the other engines are). ``folder``: where the
    watermark is kept; by default the local store's own folder (Edge's ``root``). A connection
    given is best the store's own: tasks sharing one connection share its open transaction, and
    this store's lock keeps only its own tasks out of it.
    """

    def __init__(self, local: VectorStore, log: Database | Path | str, folder: Path | None = None) -> None:
        self.local = local
        self.owner_id = local.owner_id
        root = folder if folder is not None else getattr(local, "root", None)
        if root is None:
            raise ValueError("a replica needs a folder for its watermark")
        self._mark_file = Path(root) / WATERMARK_FILE
        self._target = log if isinstance(log, (str, Path)) else None
        self._db: Database | None = None if isinstance(log, (str, Path)) else log
        self._migrated = False
        self._lock = asyncio.Lock()
        #: collections open in the local store in this process.
        self._open: set[str] = set()
        #: the log the watermark file names (None: no file yet) and this owner's mark in it.
        self._saved_log, self._mark = self._read_mark()
        self._log_id: str | None = None
        #: log rows applied to the replica by this object (a restart replays only what it missed).
        self.applied = 0

    @classmethod
    async def open(cls, local: VectorStore, log: Database | Path | str, folder: Path | None = None) -> ReplicatedStore:
        """Connected, migrated and caught up now: a bad URL fails at start, not at first read."""
        store = cls(local, log, folder)
        async with store._lock:
            await store._catch_up()
        return store

    # -- the watermark -------------------------------------------------------------------------

    def _read_marks(self) -> dict[str, Any]:
        """An unreadable file counts as none: replaying the whole log is always safe, only slower."""
        try:
            marks = json.loads(self._mark_file.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return marks if isinstance(marks, dict) and isinstance(marks.get("owners"), dict) else {}

    def _read_mark(self) -> tuple[str | None, int]:
        marks = self._read_marks()
        return marks.get("log"), int(marks.get("owners", {}).get(self.owner_id, 0))

    def _write_mark(self) -> None:
        """Atomic (a new file renamed over the old): a crash leaves the old mark, never half a one."""
        marks = self._read_marks()
        owners = marks.get("owners", {}) if marks.get("log") == self._log_id else {}
        tmp = self._mark_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"log": self._log_id, "owners": {**owners, self.owner_id: self._mark}}))
        os.replace(tmp, self._mark_file)

    # -- the log -------------------------------------------------------------------------------

    async def _log(self) -> Database:
        if self._db is None:
            assert self._target is not None
            self._db = await open_database(self._target, [MIGRATIONS], "vector log")
            self._migrated = True
        if not self._migrated:
            await migrate(self._db, MIGRATIONS)
            self._migrated = True
        if self._log_id is None:
            await self._check_follows(self._db)
        return self._db

    async def _check_follows(self, db: Database) -> None:
        """Once per connection: the folder replicates this log, and not beyond its end. An owner's
        highest seq never goes down (every write ends with an insert; nothing prunes tombstones
        yet: pruning must keep each owner's last row), so a mark above it means the log lost rows
        the replica applied, and later rows would reuse those seqs unseen."""
        row = await db.fetchone(f"SELECT log_id FROM {META}")
        assert row is not None  # migration 1 wrote it
        folder = self._mark_file.parent
        if self._saved_log is not None and self._saved_log != row[0]:
            raise ReplicaDiverged(
                f"the vector replica in {folder} follows another vector log; "
                "empty that folder to rebuild it from this log"
            )
        top = await db.fetchone(f"SELECT COALESCE(MAX(seq), 0) FROM {TABLE} WHERE owner = ?", (self.owner_id,))
        end = int(top[0]) if top else 0
        if self._mark > end:
            raise ReplicaDiverged(
                f"the vector replica in {folder} has applied the vector log up to row {self._mark}, but the log "
                f"ends at {end} (restored from an older backup?); empty that folder to rebuild it from the log"
            )
        self._log_id = str(row[0])

    async def _catch_up(self) -> None:
        """Apply every row above the watermark, in order (the caller holds ``self._lock``)."""
        db = await self._log()
        while True:
            rows = await db.fetchall(_ROWS, (self.owner_id, self._mark, BATCH))
            if not rows:
                return
            await self._apply(db, rows)
            self._mark = int(rows[-1][0])
            self.applied += len(rows)
            await asyncio.to_thread(self._write_mark)
            if len(rows) < BATCH:
                return

    async def _apply(self, db: Database, rows: list[Row]) -> None:
        """One local upsert per run of upsert rows of one collection (a replay of thousands of
        points is a few engine calls); every other row on its own, in order."""
        run: list[PointIn] = []
        run_collection = ""
        for _seq, collection, op, key, body, dense, sparse in rows:
            if run and (op != "upsert" or collection != run_collection):
                await self.local.upsert(run_collection, run)
                run = []
            if op == "ensure":
                spec = json.loads(body)
                await self.local.ensure_collection(collection, spec["dim"], spec["embedder"])
                self._open.add(collection)
            elif op == "drop":
                await self.local.drop_collection(collection)
                self._open.discard(collection)
            elif not await self._opened(db, collection):
                continue  # a tombstone of a collection that no longer exists: nothing to delete
            elif op == "upsert":
                run_collection = collection
                run.append(_point(key, body, dense, sparse))
            elif op == "delete":
                await self.local.delete(collection, json.loads(body))
            elif op == "delete_where":
                await self.local.delete_where(collection, json.loads(body))
        if run:
            await self.local.upsert(run_collection, run)

    async def _opened(self, db: Database, collection: str) -> bool:
        """Open locally a collection whose ``ensure`` row was applied in an earlier life."""
        if collection in self._open:
            return True
        row = await db.fetchone(_ENSURED, (self.owner_id, collection))
        if row is None:
            return False
        spec = json.loads(row[0])
        await self.local.ensure_collection(collection, spec["dim"], spec["embedder"])
        self._open.add(collection)
        return True

    def _need(self, collection: str) -> None:
        """A write to a collection never ensured would be logged and then fail on every replica."""
        if collection not in self._open:
            raise KeyError(f"collection {collection!r} is not open; call ensure_collection first")

    async def _delete_rows(self, db: Database, collection: str, keys: Sequence[str]) -> None:
        for i in range(0, len(keys), _CHUNK):
            chunk = list(keys[i : i + _CHUNK])
            marks = ", ".join("?" * len(chunk))
            await db.execute(
                f"DELETE FROM {TABLE} WHERE owner = ? AND collection = ? AND op = 'upsert' AND key IN ({marks})",
                (self.owner_id, collection, *chunk),
            )

    async def _tombstone(self, db: Database, collection: str, op: str, body: Any) -> None:
        await db.execute(INSERT, (self.owner_id, collection, op, None, _json(body), None, None))

    # -- writes --------------------------------------------------------------------------------

    async def ensure_collection(self, name: str, dim: int, embedder: str) -> None:
        """Recorded once per collection: an ``ensure`` row is never replaced (a newer one would
        land after the collection's upserts, and a newcomer would replay them into nothing)."""
        async with self._lock:
            db = await self._log()
            async with db.transaction(LOCK):
                row = await db.fetchone(_ENSURED, (self.owner_id, name))
                if row is None:
                    await self._tombstone(db, name, "ensure", {"dim": dim, "embedder": embedder})
                else:
                    spec = json.loads(row[0])
                    if spec != {"dim": dim, "embedder": embedder}:
                        raise StoreMismatch(
                            f"collection {name!r} in the vector log was built with {spec['embedder']} "
                            f"({spec['dim']}-d), not {embedder} ({dim}-d); run `epmem reindex` to rebuild it"
                        )
            await self._catch_up()
            if name not in self._open:
                await self.local.ensure_collection(name, dim, embedder)
                self._open.add(name)

    async def upsert(self, collection: str, points: list[PointIn]) -> None:
        if not points:
            return
        latest = {p.key: p for p in points}  # a key twice in one batch: the last one, as the engines
        async with self._lock:
            self._need(collection)
            db = await self._log()
            async with db.transaction(LOCK):
                await self._delete_rows(db, collection, list(latest))
                await db.executemany(INSERT, [log_row(self.owner_id, collection, p) for p in latest.values()])
            await self._catch_up()

    async def delete(self, collection: str, keys: list[str]) -> None:
        if not keys:
            return
        async with self._lock:
            self._need(collection)
            db = await self._log()
            async with db.transaction(LOCK):
                await self._delete_rows(db, collection, keys)
                await self._tombstone(db, collection, "delete", list(keys))
            await self._catch_up()

    async def delete_where(self, collection: str, where: Where) -> None:
        async with self._lock:
            self._need(collection)
            db = await self._log()
            async with db.transaction(LOCK):
                await self._catch_up()  # under the lock: the replica is now the whole log
                keys = [hit.key for hit in await self.local.scroll(collection, where)]
                await self._delete_rows(db, collection, keys)
                await self._tombstone(db, collection, "delete_where", where)
            await self._catch_up()

    async def drop_collection(self, name: str) -> None:
        async with self._lock:
            db = await self._log()
            async with db.transaction(LOCK):
                await db.execute(f"DELETE FROM {TABLE} WHERE owner = ? AND collection = ?", (self.owner_id, name))
                await self._tombstone(db, name, "drop", None)
            await self._catch_up()
            await self.local.drop_collection(name)  # also when the log never knew it
            self._open.discard(name)

    async def compact(self) -> None:
        """The replica's deletions made physical, then the log table's (see the module doc)."""
        async with self._lock:
            await self._catch_up()
            await self.local.compact()
            db = await self._log()
            await db.scrub(TABLE)

    # -- reads ---------------------------------------------------------------------------------

    async def _fresh(self) -> VectorStore:
        async with self._lock:
            await self._catch_up()
        return self.local

    async def retrieve(self, collection: str, keys: list[str]) -> list[Hit]:
        return await (await self._fresh()).retrieve(collection, keys)

    async def query_dense(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        limit: int,
        where: Where | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> list[Hit]:
        return await (await self._fresh()).query_dense(collection, vector, limit, where, fields)

    async def query_dense_many(
        self, collection: str, vectors: Sequence[npt.NDArray[np.float32]], limit: int
    ) -> list[list[Hit]]:
        return await (await self._fresh()).query_dense_many(collection, vectors, limit)

    async def query_sparse(
        self, collection: str, vector: SparseVec, limit: int, where: Where | None = None
    ) -> list[Hit]:
        return await (await self._fresh()).query_sparse(collection, vector, limit, where)

    async def query_hybrid(self, collection: str, query: Hybrid, where: Where | None = None) -> list[Hit]:
        return await (await self._fresh()).query_hybrid(collection, query, where)

    async def scroll(self, collection: str, where: Where | None = None) -> list[Hit]:
        return await (await self._fresh()).scroll(collection, where)

    async def count(self, collection: str, where: Where | None = None) -> int:
        return await (await self._fresh()).count(collection, where)

    async def recorded(self, name: str) -> dict[str, Any] | None:
        return await (await self._fresh()).recorded(name)

    async def close(self) -> None:
        async with self._lock:
            await self.local.close()
            if self._target is not None and self._db is not None:
                await self._db.close()
                self._db = None
