"""Two replicas of one vector log against a dict: whatever sequence of upserts, deletes, deletes
by condition and restarts goes through either, both read exactly the dict, and the log keeps one
upsert row per live key (epmem.store.replicated). On a SQLite log, to keep examples cheap; the
PostgreSQL log runs the same code paths in test_store_replicated.py."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from epmem.store.base import PointIn, SparseVec
from epmem.store.edge import EdgeStore
from epmem.store.replicated import ReplicatedStore

DIM = 4
KEYS = [f"k{i}" for i in range(5)]

Op = tuple[str, int, list[str], int]
_upsert: st.SearchStrategy[Op] = st.tuples(
    st.just("upsert"), st.integers(0, 1), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3), st.integers(0, 2)
)
_delete: st.SearchStrategy[Op] = st.tuples(
    st.just("delete"), st.integers(0, 1), st.lists(st.sampled_from(KEYS), min_size=1, max_size=3), st.just(0)
)
_where: st.SearchStrategy[Op] = st.tuples(st.just("delete_where"), st.integers(0, 1), st.just([]), st.integers(0, 2))
_restart: st.SearchStrategy[Op] = st.tuples(st.just("restart"), st.integers(0, 1), st.just([]), st.just(0))
OPS = st.lists(st.one_of(_upsert, _delete, _where, _restart), min_size=1, max_size=12)


def point(key: str, n: int, step: int) -> PointIn:
    vector = np.full(DIM, 0.1, dtype=np.float32)
    vector[n % DIM] = 1.0
    return PointIn(key, {"n": n, "step": step}, vector, SparseVec([n + 1], [1.0]))


async def open_replica(folder: Path, log: Path) -> ReplicatedStore:
    store = await ReplicatedStore.open(EdgeStore(folder, "owner-1"), log)
    await store.ensure_collection("facts", DIM, "test")
    return store


async def scenario(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.sqlite"
        folders = [Path(tmp) / "a", Path(tmp) / "b"]
        replicas = [await open_replica(f, log) for f in folders]
        model: dict[str, dict[str, int]] = {}
        try:
            for step, (op, who, keys, n) in enumerate(ops):
                store = replicas[who]
                if op == "upsert":
                    await store.upsert("facts", [point(k, n, step) for k in keys])
                    model.update({k: {"n": n, "step": step} for k in keys})
                elif op == "delete":
                    await store.delete("facts", keys)
                    model = {k: v for k, v in model.items() if k not in keys}
                elif op == "delete_where":
                    await store.delete_where("facts", {"n": n})
                    model = {k: v for k, v in model.items() if v["n"] != n}
                else:
                    await store.close()
                    replicas[who] = await open_replica(folders[who], log)
                other = replicas[1 - who]
                assert {
                    h.key: {"n": h.payload["n"], "step": h.payload["step"]} for h in await other.scroll("facts")
                } == model
            for store in replicas:
                assert {h.key: h.payload["step"] for h in await store.scroll("facts")} == {
                    k: v["step"] for k, v in model.items()
                }
        finally:
            for store in replicas:
                await store.close()
        with sqlite3.connect(log) as db:
            [(upserts,)] = db.execute("SELECT count(*) FROM vector_log WHERE op = 'upsert'").fetchall()
        assert upserts == len(model)


@settings(max_examples=20, deadline=None)
@given(OPS)
def test_two_replicas_read_what_a_dict_holds(ops: list[Op]) -> None:
    asyncio.run(scenario(ops))
