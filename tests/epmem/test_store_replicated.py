"""Replicas of one vector log (epmem.store.replicated): several Edge folders, one database.

Each test runs on a fresh PostgreSQL database and on a SQLite file (``database_target``); each
replica has its own folder and its own connection, as separate workers would. Nothing is mocked.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from epmem.db import connect_to, is_postgres_url
from epmem.embedding.minilm import default_embedder
from epmem.memory.facts import Fact
from epmem.memory.recall import FactMemory, SubjectNormalizer
from epmem.store import open_store
from epmem.store.base import PointIn, SparseVec
from epmem.store.edge import EdgeStore
from epmem.store.replicated import INSERT, LOCK, WATERMARK_FILE, ReplicaDiverged, ReplicatedStore, log_row
from testkit.postgres import EmbeddedPostgres, run_sql

DIM = 8
CANARY = "ZQXCANARY"


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).random(DIM, dtype=np.float32) + 0.01
    return (v / np.linalg.norm(v)).astype(np.float32)


def point(key: str, n: int, text: str | None = None, session: str = "s1") -> PointIn:
    payload = {"text": text or f"note {key} {n}", "session_id": session, "n": n}
    return PointIn(key, payload, vec(n), SparseVec([n % 50 + 1], [1.0]))


async def replica(folder: Path, target: Path | str, owner: str = "owner-1") -> ReplicatedStore:
    store = await ReplicatedStore.open(EdgeStore(folder, owner), target)
    await store.ensure_collection("facts", DIM, "test-embedder")
    return store


async def state(store: ReplicatedStore) -> list[tuple[str, dict[str, object]]]:
    return sorted((h.key, h.payload) for h in await store.scroll("facts"))


async def log_rows(target: Path | str) -> list[tuple[object, ...]]:
    db = await connect_to(target)
    try:
        return await db.fetchall("SELECT seq, op, key, body FROM vector_log ORDER BY seq")
    finally:
        await db.close()


async def test_writes_through_one_replica_are_read_through_another(tmp_path: Path, database_target: Path | str) -> None:
    a = await replica(tmp_path / "a", database_target)
    b = await replica(tmp_path / "b", database_target)
    try:
        await a.upsert("facts", [point(f"k{i}", i, session=f"s{i % 3}") for i in range(9)])
        assert await b.count("facts") == 9
        assert await state(b) == await state(a)
        [hit] = await b.query_dense("facts", vec(4), 1)
        assert hit.key == "k4"
        await a.upsert("facts", [point("k4", 4, text="changed")])
        assert [h.payload["text"] for h in await b.retrieve("facts", ["k4"])] == ["changed"]
        await a.delete("facts", ["k0", "k1"])
        assert sorted(h.key for h in await b.retrieve("facts", ["k0", "k1", "k2"])) == ["k2"]
        await a.delete_where("facts", {"session_id": ["s2"]})
        assert await b.count("facts", {"session_id": "s2"}) == 0
        assert await state(b) == await state(a)
        await b.upsert("facts", [point("from-b", 77)])  # the other way round
        assert [h.key for h in await a.retrieve("facts", ["from-b"])] == ["from-b"]
        assert await state(b) == await state(a)
        await a.drop_collection("facts")
        assert await b.recorded("facts") is None
        await a.ensure_collection("facts", DIM, "another-embedder")  # a reindex
        await b.ensure_collection("facts", DIM, "another-embedder")
        assert await b.count("facts") == 0
        assert await b.recorded("facts") == {"embedder": "another-embedder", "dim": DIM}
    finally:
        await a.close()
        await b.close()


async def test_a_late_replica_catches_up_and_a_restarted_one_resumes(
    tmp_path: Path, database_target: Path | str
) -> None:
    a = await replica(tmp_path / "a", database_target)
    b = await replica(tmp_path / "b", database_target)
    try:
        await a.upsert("facts", [point(f"k{i}", i) for i in range(20)])
        await a.upsert("facts", [point(f"k{i}", i, text="again") for i in range(5)])  # replaces 5 rows
        await a.delete("facts", ["k19"])
        assert await b.count("facts") == 19
        await b.close()
        rows = await log_rows(database_target)
        assert len(rows) == 1 + 19 + 1  # ensure, one upsert row per live key, a tombstone
        late = await replica(tmp_path / "late", database_target)
        try:
            assert late.applied == len(rows)
            assert await state(late) == await state(a)
        finally:
            await late.close()
        await a.upsert("facts", [point(f"new{i}", 100 + i) for i in range(3)])
        b = await replica(tmp_path / "b", database_target)
        assert b.applied == 3  # from its watermark: the three new rows, nothing before them
        assert await state(b) == await state(a)
        assert await b.count("facts") == 22
    finally:
        await a.close()
        await b.close()


async def test_concurrent_reads_in_one_process_apply_each_row_once(tmp_path: Path, database_target: Path | str) -> None:
    a = await replica(tmp_path / "a", database_target)
    b = await replica(tmp_path / "b", database_target)
    try:
        await a.upsert("facts", [point(f"k{i}", i) for i in range(30)])
        before = b.applied
        counts = await asyncio.gather(*(b.count("facts") for _ in range(10)))
        assert counts == [30] * 10
        assert b.applied - before == 30
    finally:
        await a.close()
        await b.close()


async def canary_left(target: Path | str, tmp_path: Path, canary: str = CANARY) -> list[str]:
    """Where the canary still is in the log: its rows (every column, as text) and, on PostgreSQL,
    the table's files after a checkpoint; on SQLite every file of the database (WAL included)."""
    db = await connect_to(target)
    try:
        if not is_postgres_url(target):
            rows = await db.fetchall(
                "SELECT seq FROM vector_log WHERE instr(body || coalesce(key, ''), ?) > 0", (CANARY,)
            )
            files = [str(p) for p in tmp_path.glob("log.sqlite*") if CANARY.encode() in p.read_bytes()]
            return [f"row {r[0]}" for r in rows] + files
        rows = await db.fetchall("SELECT seq FROM vector_log t WHERE strpos(t::text, ?) > 0", (canary,))
        await db.execute("CHECKPOINT")
        [(data,)] = await db.fetchall("SHOW data_directory")
        paths = await db.fetchall(
            "SELECT pg_relation_filepath(oid) FROM pg_class WHERE oid IN "
            "(SELECT oid FROM pg_class WHERE relname = 'vector_log' UNION "
            "SELECT reltoastrelid FROM pg_class WHERE relname = 'vector_log')"
        )
        files = [str(f) for (rel,) in paths for f in Path(data).glob(f"{rel}*") if canary.encode() in f.read_bytes()]
        return [f"row {r[0]}" for r in rows] + files
    finally:
        await db.close()


def folder_has(folder: Path, needle: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.fixture
def log_target(tmp_path: Path, database_target: Path | str) -> Path | str:
    """The log: the PostgreSQL database, or a SQLite file whose every byte the test can read."""
    return database_target if is_postgres_url(database_target) else tmp_path / "log.sqlite"


async def test_an_erased_payload_is_gone_from_the_log_and_never_reaches_a_replica(
    tmp_path: Path, log_target: Path | str
) -> None:
    a = await replica(tmp_path / "a", log_target)
    b = await replica(tmp_path / "b", log_target)
    try:
        await a.upsert("facts", [point(f"k{i}", i) for i in range(6)])
        secrets = [point(f"x{i}", 40 + i, text=f"{CANARY} secret {i}", session="hush") for i in range(4)]
        await a.upsert("facts", secrets)
        await a.upsert("facts", secrets[:1])  # an overwrite: the replaced row goes too
        assert len(await b.scroll("facts", {"session_id": "hush"})) == 4  # b holds them
        assert await canary_left(log_target, tmp_path) != []  # the check sees what it checks
        await b.close()  # b is down during the erasure
        await a.delete("facts", ["x0"])
        await a.delete_where("facts", {"session_id": "hush"})
        await a.compact()
        assert await canary_left(log_target, tmp_path) == []
        assert folder_has(tmp_path / "a", CANARY) == []
        fresh = await replica(tmp_path / "fresh", log_target)  # opened after the erasure
        try:
            assert await fresh.scroll("facts", {"session_id": "hush"}) == []
            assert await fresh.count("facts") == 6
            assert folder_has(tmp_path / "fresh", CANARY) == []  # never received, not even deleted
        finally:
            await fresh.close()
        b = await replica(tmp_path / "b", log_target)  # back, it had them: the tombstones reach it
        assert await b.scroll("facts", {"session_id": "hush"}) == []
        assert [h.key for h in await b.query_sparse("facts", SparseVec([41], [1.0]), 5)] == []
        await b.compact()
        assert folder_has(tmp_path / "b", CANARY) == []
    finally:
        await a.close()
        await b.close()


async def test_four_replicas_writing_at_once_all_see_every_write(tmp_path: Path, database_target: Path | str) -> None:
    folders = [tmp_path / f"r{i}" for i in range(4)]
    if is_postgres_url(database_target):  # workers starting together: one ensure row, one schema
        stores = list(await asyncio.gather(*(replica(f, database_target) for f in folders)))
    else:  # SQLite: connect() sets WAL before its busy timeout (docs/POSTGRES.md), so one by one
        stores = [await replica(f, database_target) for f in folders]

    async def write(i: int, store: ReplicatedStore) -> None:
        for j in range(50):
            await store.upsert("facts", [point(f"r{i}-{j}", i * 100 + j, text=f"from {i} number {j}")])

    try:
        await asyncio.gather(*(write(i, s) for i, s in enumerate(stores)))
        seen = [await state(s) for s in stores]
        assert len(seen[0]) == 200
        assert all(s == seen[0] for s in seen)
        # one writer at a time: every seq drawn once, none lost, in commit order
        assert [row[0] for row in await log_rows(database_target)] == list(range(1, 202))
    finally:
        for s in stores:
            await s.close()


async def test_open_store_wraps_edge_in_a_replica(tmp_path: Path, database_target: Path | str) -> None:
    store = open_store(tmp_path / "a", "owner-1", log=database_target)
    assert isinstance(store, ReplicatedStore)
    try:
        await store.ensure_collection("facts", DIM, "test-embedder")
        await store.upsert("facts", [point("k", 1)])
        other = await replica(tmp_path / "b", database_target)
        try:
            assert [h.key for h in await other.scroll("facts")] == ["k"]
        finally:
            await other.close()
    finally:
        await store.close()
    with pytest.raises(ValueError, match="not both"):
        open_store(tmp_path / "c", "owner-1", url="http://localhost:6333", log=database_target)


async def test_a_write_to_a_collection_never_ensured_is_refused_before_it_is_logged(
    tmp_path: Path, database_target: Path | str
) -> None:
    a = await replica(tmp_path / "a", database_target)
    try:
        with pytest.raises(KeyError, match="ensure_collection"):
            await a.upsert("elsewhere", [point("k", 1)])
        assert [row[1] for row in await log_rows(database_target)] == ["ensure"]
    finally:
        await a.close()


async def test_a_writer_waits_for_the_one_before_it_so_no_seq_can_be_skipped(
    tmp_path: Path, database_target: Path | str
) -> None:
    """A transaction holding the log's lock with a row drawn but not committed: the next writer
    waits (it cannot draw a seq above it), and a reader meanwhile sees neither."""
    a = await replica(tmp_path / "a", database_target)
    b = await replica(tmp_path / "b", database_target)
    slow = await connect_to(database_target)
    release = asyncio.Event()

    async def slow_writer() -> None:
        async with slow.transaction(LOCK):
            await slow.execute(INSERT, (*row_of("slow"),))
            await release.wait()

    try:
        held = asyncio.create_task(slow_writer())
        await asyncio.sleep(0.3)
        waiting = asyncio.create_task(a.upsert("facts", [point("fast", 2)]))
        await asyncio.sleep(0.5)
        assert not waiting.done()
        assert await b.count("facts") == 0
        release.set()
        await held
        await waiting
        assert sorted(h.key for h in await b.scroll("facts")) == ["fast", "slow"]
        assert [row[2] for row in await log_rows(database_target)] == [None, "slow", "fast"]
    finally:
        release.set()
        await slow.close()
        await a.close()
        await b.close()


def row_of(key: str) -> tuple[object, ...]:
    return log_row("owner-1", "facts", point(key, 1))


async def test_without_the_lock_a_late_commit_below_the_watermark_would_be_lost(
    tmp_path: Path, postgres_server: EmbeddedPostgres
) -> None:
    """Why writers draw their seq under the lock: a row inserted without it commits above a
    row still in flight, a replica moves its watermark past the gap, and the late row is never
    applied. (The check above sees what it checks: this is the failure it rules out.)"""
    url = postgres_server.database()
    b = await replica(tmp_path / "b", url)
    early, rogue = await connect_to(url), await connect_to(url)
    try:
        async with early.transaction("something else"):  # not the log's lock
            await early.execute(INSERT, (*row_of("early"),))
            await rogue.execute(INSERT, (*row_of("rogue"),))  # autocommit: a higher seq, visible now
            assert [h.key for h in await b.scroll("facts")] == ["rogue"]
        assert len(await log_rows(url)) == 3  # "early" is committed now, below b's watermark
        assert [h.key for h in await b.scroll("facts")] == ["rogue"]
    finally:
        await early.close()
        await rogue.close()
        await b.close()


WORKER = """
import asyncio, sys
from pathlib import Path
from epmem.store.base import PointIn, SparseVec
from epmem.store import open_store
import numpy as np

async def main(folder, log):
    store = open_store(Path(folder), "owner-1", log=log)
    await store.ensure_collection("facts", 8, "test-embedder")
    vector = np.full(8, 0.35, dtype=np.float32)
    await store.upsert("facts", [PointIn(f"w{i}", {"text": f"from the worker {i}"}, vector, SparseVec([i + 1], [1.0])) for i in range(10)])
    await store.delete("facts", ["k0"])
    print(await store.count("facts"))
    await store.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_a_worker_process_writes_what_this_one_reads(tmp_path: Path, database_target: Path | str) -> None:
    """Two OS processes, each with its own Edge folder (one process per folder), one log."""
    here = await replica(tmp_path / "here", database_target)
    try:
        await here.upsert("facts", [point("k0", 0), point("k1", 1)])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WORKER,
            str(tmp_path / "there"),
            str(database_target),
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip() == "11"
        assert sorted(h.key for h in await here.scroll("facts")) == ["k1", *(f"w{i}" for i in range(10))]
    finally:
        await here.close()


async def test_a_fact_forgotten_through_one_worker_leaves_no_trace_in_the_log_or_any_replica(
    tmp_path: Path, log_target: Path | str
) -> None:
    """The memory layer on two replicas: what one worker forgets, the other forgets too."""
    embedder = default_embedder()
    stores = [await ReplicatedStore.open(EdgeStore(tmp_path / f"w{i}", "owner"), log_target) for i in range(2)]
    try:
        a, b = [await FactMemory(s, embedder, SubjectNormalizer(["Lin Su"])).open() for s in stores]
        keep = [Fact(id=f"k{i}", text=f"Lin went to the bakery on day {i}", event_id=f"e{i}") for i in range(10)]
        secret = Fact(id="s1", text="Lin owes Quillfeather Bank 40k", event_id="es")
        await a.add([*keep, secret])
        await a.update([secret.model_copy(update={"state": "annotated", "level": 0})])
        assert await b.count() == 11
        assert folder_has(tmp_path / "w1", "Quillfeather")  # the second worker holds it
        await a.forget(["s1"])
        assert await b.count() == 10
        await stores[1].compact()
        assert await canary_left(log_target, tmp_path, "Quillfeather") == []
        assert folder_has(tmp_path / "w0", "Quillfeather") == []
        assert folder_has(tmp_path / "w1", "Quillfeather") == []
    finally:
        for s in stores:
            await s.close()


async def test_a_replica_that_no_longer_follows_the_log_is_told_so(
    tmp_path: Path, postgres_server: EmbeddedPostgres
) -> None:
    """Moved to another log, or its log restored from an older backup: refused, not half-replayed."""
    first, second = postgres_server.database(), postgres_server.database()
    a = await replica(tmp_path / "a", first)
    await a.upsert("facts", [point(f"k{i}", i) for i in range(5)])
    await a.close()
    with pytest.raises(ReplicaDiverged, match="another vector log"):
        await ReplicatedStore.open(EdgeStore(tmp_path / "a", "owner-1"), second)
    run_sql(first, "DELETE FROM vector_log WHERE seq > 3")  # a backup from before the last rows
    with pytest.raises(ReplicaDiverged, match="up to row 6, but the log ends at 3"):
        await ReplicatedStore.open(EdgeStore(tmp_path / "a", "owner-1"), first)


async def test_an_unreadable_watermark_replays_the_whole_log(tmp_path: Path, database_target: Path | str) -> None:
    """Replaying is idempotent (every row sets a key's state or deletes by condition): safe."""
    a = await replica(tmp_path / "a", database_target)
    try:
        await a.upsert("facts", [point(f"k{i}", i) for i in range(5)])
        await a.delete_where("facts", {"n": 2})
        before = await state(a)
    finally:
        await a.close()
    (tmp_path / "a" / WATERMARK_FILE).write_text("{half a fi")
    a = await replica(tmp_path / "a", database_target)
    try:
        assert a.applied == 1 + 5 - 1 + 1  # ensure, the live upserts, the tombstone
        assert await state(a) == before
    finally:
        await a.close()
