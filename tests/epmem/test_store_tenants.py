"""Owners sharing one store (a Qdrant server's collections; here qdrant-client's local mode, and
Edge on one folder) never read, change or delete each other's points, whatever they hold.

(And an Edge replica of a vector log that both owners' rows share: epmem.store.replicated.)

Property-based: two owners write points under overlapping keys and payloads into one folder,
then every read of one returns only its own, a delete of one leaves the other whole, and a
reopen finds each owner's points as that owner left them."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from epmem.store.base import Hybrid, PointIn, SparseVec, VectorStore
from epmem.store.edge import EdgeStore
from epmem.store.qdrant_server import QdrantServerStore
from epmem.store.replicated import ReplicatedStore

DIM = 6
ENGINES: dict[str, Callable[[Path, str], VectorStore]] = {
    "edge": lambda folder, owner: EdgeStore(folder, owner),
    "qdrant-local": lambda folder, owner: QdrantServerStore(owner, path=folder),
    # both owners' rows in one log file, each replica applying only its owner's
    "replicated-sqlite": lambda folder, owner: ReplicatedStore(EdgeStore(folder, owner), folder.parent / "log.sqlite"),
}

_point = st.tuples(
    st.sampled_from([f"k{i}" for i in range(6)]),  # the same keys for both owners
    st.lists(st.floats(0.05, 1.0), min_size=DIM, max_size=DIM),
    st.integers(0, 3),
)
POINTS = st.lists(_point, min_size=1, max_size=8, unique_by=lambda p: p[0])


def points(owner: str, drawn: list[tuple[str, list[float], int]]) -> list[PointIn]:
    out = []
    for key, values, n in drawn:
        vector = np.asarray(values, dtype=np.float32)
        payload = {"text": f"{owner} says {key}", "owner_mark": owner, "n": n}
        out.append(PointIn(key, payload, vector / np.linalg.norm(vector), SparseVec([n + 1], [1.0])))
    return out


async def reads(store: VectorStore, probe: np.ndarray, keys: list[str]) -> list[dict[str, object]]:
    """Every way the memory reads the store, flattened to the payloads it got back."""
    hits = [
        *await store.scroll("turns"),
        *await store.retrieve("turns", keys),
        *await store.query_dense("turns", probe, 20),
        *[h for batch in await store.query_dense_many("turns", [probe, -probe], 20) for h in batch],
        *await store.query_sparse("turns", SparseVec([1, 2, 3, 4], [1.0] * 4), 20),
        *await store.query_hybrid("turns", Hybrid(probe, SparseVec([2], [1.0]), limit=20)),
        *await store.scroll("turns", {"n": 1}),
    ]
    return [h.payload for h in hits]


async def scenario(engine: str, mine: list[PointIn], theirs: list[PointIn], gone: int) -> None:
    open_store = ENGINES[engine]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "qdrant"
        keys = [f"k{i}" for i in range(6)]
        probe = np.full(DIM, 1 / np.sqrt(DIM), dtype=np.float32)
        a = open_store(folder, "owner-a")
        await a.ensure_collection("turns", DIM, "test")
        await a.upsert("turns", mine)
        await a.close()
        b = open_store(folder, "owner-b")
        try:
            await b.ensure_collection("turns", DIM, "test")
            await b.upsert("turns", theirs)
            assert {p["owner_mark"] for p in await reads(b, probe, keys)} == {"owner-b"}
            assert await b.count("turns") == len(theirs)
            await b.delete_where("turns", {"n": gone})
            await b.delete("turns", keys[:2])
        finally:
            await b.close()
        a = open_store(folder, "owner-a")
        try:
            await a.ensure_collection("turns", DIM, "test")
            assert {p["owner_mark"] for p in await reads(a, probe, keys)} == {"owner-a"}
            assert sorted(h.key for h in await a.scroll("turns")) == sorted(p.key for p in mine)
        finally:
            await a.close()


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(sorted(ENGINES)), POINTS, POINTS, st.integers(0, 3))
def test_an_owner_reads_and_deletes_only_its_own_points(
    engine: str, mine: list[tuple[str, list[float], int]], theirs: list[tuple[str, list[float], int]], gone: int
) -> None:
    asyncio.run(scenario(engine, points("owner-a", mine), points("owner-b", theirs), gone))
