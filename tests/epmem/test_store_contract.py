"""One contract, two engines: Qdrant Edge in-process and qdrant-client (local mode here); and
an Edge replica of a vector log shared through a database (PostgreSQL, or a SQLite file).

Every test runs against each; a behaviour the memory relies on is a behaviour of the seam, so
switching EPMEM_QDRANT_URL on (or sharing the memory between workers) must not change what the
delegate remembers or forgets.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
import pytest

from epmem.store.base import Hybrid, PointIn, SparseVec, StoreLocked, StoreMismatch, VectorStore
from epmem.store.edge import EdgeStore
from epmem.store.qdrant_server import QdrantServerStore
from epmem.store.replicated import ReplicatedStore
from testkit.postgres import EmbeddedPostgres

DIM = 8
Opener = Callable[[str], VectorStore]


def _vec(*hot: int) -> np.ndarray:
    v = np.full(DIM, 0.01, dtype=np.float32)
    for i in hot:
        v[i] = 1.0
    return v / np.linalg.norm(v)


def _points() -> list[PointIn]:
    return [
        PointIn("a", {"text": "alpha apples", "session_id": "s1", "n": 1}, _vec(0), SparseVec([1, 2], [1.0, 1.0])),
        PointIn("b", {"text": "beta bananas", "session_id": "s1", "n": 2}, _vec(1), SparseVec([3], [1.0])),
        PointIn("c", {"text": "gamma cherries", "session_id": "s2", "n": 3}, _vec(2), SparseVec([4], [1.0])),
        PointIn("d", {"text": "delta dates", "session_id": "s3", "n": 4}, _vec(0, 2), SparseVec([2, 4], [1.0, 1.0])),
    ]


@pytest.fixture(params=["edge", "qdrant-local", "replicated-postgres", "replicated-sqlite"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """The replicas' log: a fresh PostgreSQL database, or a SQLite file kept inside the folder,
    so that the every-file scan of the erasure test covers the log's file too."""
    folder = tmp_path / "qdrant"
    if request.param == "edge":
        return lambda owner: EdgeStore(folder, owner)
    if request.param == "qdrant-local":
        return lambda owner: QdrantServerStore(owner, path=folder)
    if request.param == "replicated-postgres":
        server: EmbeddedPostgres = request.getfixturevalue("postgres_server")
        url = server.database()
        return lambda owner: ReplicatedStore(EdgeStore(folder, owner), url)
    return lambda owner: ReplicatedStore(EdgeStore(folder, owner), folder / "vector-log.sqlite")


@pytest.fixture
async def store(opener: Opener) -> AsyncIterator[VectorStore]:
    s = opener("owner-1")
    await s.ensure_collection("turns", DIM, "test-embedder")
    await s.upsert("turns", _points())
    yield s
    await s.close()


async def test_upsert_retrieve_count_scroll(store: VectorStore) -> None:
    assert await store.count("turns") == 4
    assert await store.count("turns", {"session_id": "s1"}) == 2
    assert await store.count("turns", {"session_id": ["s1", "s3"]}) == 3
    [hit] = await store.retrieve("turns", ["c"])
    assert hit.key == "c" and hit.payload["text"] == "gamma cherries"
    assert sorted(h.key for h in await store.scroll("turns", {"session_id": "s1"})) == ["a", "b"]


async def test_upsert_is_idempotent_by_key(store: VectorStore) -> None:
    await store.upsert("turns", _points())
    await store.upsert("turns", [PointIn("a", {"text": "alpha again", "session_id": "s1"}, _vec(0))])
    assert await store.count("turns") == 4
    [hit] = await store.retrieve("turns", ["a"])
    assert hit.payload["text"] == "alpha again"


async def test_delete_by_key_and_by_filter(store: VectorStore) -> None:
    await store.delete("turns", ["a"])
    assert await store.retrieve("turns", ["a"]) == []
    await store.delete_where("turns", {"session_id": "s1"})
    assert sorted(h.key for h in await store.scroll("turns")) == ["c", "d"]


async def test_dense_sparse_and_hybrid_queries_rank_and_filter(store: VectorStore) -> None:
    dense = await store.query_dense("turns", _vec(2), 2)
    assert dense[0].key == "c"
    sparse = await store.query_sparse("turns", SparseVec([3], [1.0]), 2)
    assert [h.key for h in sparse] == ["b"]
    hybrid = await store.query_hybrid("turns", Hybrid(_vec(0), SparseVec([2], [1.0]), limit=4))
    assert hybrid[0].key in {"a", "d"} and {h.key for h in hybrid} >= {"a", "d"}
    filtered = await store.query_hybrid(
        "turns", Hybrid(_vec(0), SparseVec([2], [1.0]), limit=4), {"session_id": ["s2", "s3"]}
    )
    assert [h.key for h in filtered][0] == "d" and {h.key for h in filtered} <= {"c", "d"}


async def test_a_batch_of_dense_queries_answers_as_the_queries_one_by_one(store: VectorStore) -> None:
    vectors = [_vec(2), _vec(0), _vec(0, 2), _vec(1)]
    one_by_one = [await store.query_dense("turns", v, 3) for v in vectors]
    batched = await store.query_dense_many("turns", vectors, 3)
    assert [[(h.key, h.score, h.payload) for h in row] for row in batched] == [
        [(h.key, h.score, h.payload) for h in row] for row in one_by_one
    ]
    assert [row[0].key for row in batched] == ["c", "a", "d", "b"]
    assert await store.query_dense_many("turns", [], 3) == []


async def test_hybrid_weights_steer_the_fusion(store: VectorStore) -> None:
    """Dense says c, sparse says b: the heavier side wins first place."""
    q = Hybrid(_vec(2), SparseVec([3], [1.0]), limit=2, prefetch=1, dense_weight=3.0, sparse_weight=1.0)
    assert (await store.query_hybrid("turns", q))[0].key == "c"
    q = Hybrid(_vec(2), SparseVec([3], [1.0]), limit=2, prefetch=1, dense_weight=1.0, sparse_weight=3.0)
    assert (await store.query_hybrid("turns", q))[0].key == "b"
    dense_only = Hybrid(_vec(2), SparseVec([3], [1.0]), limit=4, sparse_weight=0.0)
    assert [h.key for h in await store.query_hybrid("turns", dense_only)] == [
        h.key for h in await store.query_dense("turns", _vec(2), 4)
    ]


async def test_owner_is_a_tenant(opener: Opener) -> None:
    first = opener("owner-1")
    await first.ensure_collection("turns", DIM, "test-embedder")
    await first.upsert("turns", _points())
    await first.close()
    other = opener("owner-2")
    try:
        await other.ensure_collection("turns", DIM, "test-embedder")
        assert await other.count("turns") == 0
        assert await other.retrieve("turns", ["a"]) == []
        assert await other.query_dense("turns", _vec(0), 4) == []
        await other.upsert("turns", [PointIn("a", {"text": "theirs"}, _vec(0))])
        await other.delete_where("turns", {"text": "theirs"})
    finally:
        await other.close()
    again = opener("owner-1")
    try:
        await again.ensure_collection("turns", DIM, "test-embedder")
        assert await again.count("turns") == 4  # survived a restart, untouched by owner-2
    finally:
        await again.close()


async def test_embedder_mismatch_names_the_reindex_command(opener: Opener) -> None:
    s = opener("owner-1")
    await s.ensure_collection("turns", DIM, "test-embedder")
    await s.close()
    s = opener("owner-1")
    try:
        with pytest.raises(StoreMismatch, match="epmem reindex"):
            await s.ensure_collection("turns", DIM, "another-embedder")
    finally:
        await s.close()


async def test_second_open_of_a_folder_is_a_clear_error(opener: Opener, tmp_path: Path) -> None:
    s = opener("owner-1")
    await s.ensure_collection("turns", DIM, "test-embedder")
    try:
        with pytest.raises(StoreLocked, match=str(tmp_path)):
            opener("owner-1")
    finally:
        await s.close()


async def test_second_process_on_the_data_folder_is_refused(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "data" / "qdrant", "owner-1")
    try:
        code = (
            "import sys; from epmem.store.edge import EdgeStore; from epmem.store.base import StoreLocked\n"
            "try:\n    EdgeStore(sys.argv[1], 'owner-1')\nexcept StoreLocked as e:\n    print(e); sys.exit(3)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "data" / "qdrant")], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 3, proc.stderr
        assert str(tmp_path / "data") in proc.stdout
    finally:
        await store.close()


async def test_forgotten_text_is_gone_from_every_file(opener: Opener, tmp_path: Path) -> None:
    s = opener("owner-1")
    await s.ensure_collection("facts", DIM, "test-embedder")
    await s.upsert("facts", _points())
    secret = PointIn("x", {"text": "ZQXCANARY Lin hides a 40k debt"}, _vec(3), SparseVec([9], [1.0]))
    await s.upsert("facts", [secret])
    await s.upsert("facts", [secret])  # an overwrite leaves an old copy too
    assert await s.count("facts") == 5
    await s.delete("facts", ["x"])
    await s.compact()
    await s.close()
    leftovers = [str(p) for p in (tmp_path / "qdrant").rglob("*") if p.is_file() and b"ZQXCANARY" in p.read_bytes()]
    assert leftovers == []
    reopened = opener("owner-1")
    try:
        await reopened.ensure_collection("facts", DIM, "test-embedder")
        assert await reopened.count("facts") == 4
    finally:
        await reopened.close()


async def test_hybrid_returns_only_the_asked_fields(store: VectorStore) -> None:
    # c and d tie on the sparse side (both hold term 4) and the engine breaks that tie either
    # way, so look the hit up by key rather than by rank: this test is about the fields.
    query = Hybrid(_vec(2), SparseVec([4], [1.0]), limit=4, fields=("session_id",))
    hits = {h.key: h for h in await store.query_hybrid("turns", query)}
    assert set(hits) == {"a", "b", "c", "d"}
    assert hits["c"].payload.get("session_id") == "s2"
    assert all("text" not in h.payload and "n" not in h.payload for h in hits.values())
