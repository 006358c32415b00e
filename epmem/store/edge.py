"""Qdrant Edge: the Qdrant engine in-process, one shard per collection under the data folder.

Edge calls are synchronous and hold the GIL, so every call goes through one worker thread
(``asyncio.to_thread`` under a lock): the event loop keeps serving other chats while a query
runs, and the shard never sees two calls at once. The WAL is off so that forgetting is real:
without it a deleted payload lives on only until the next flush and optimize, which
:meth:`compact` performs.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import qdrant_edge as qe

from epmem.store.base import (
    DENSE,
    KEY_FIELD,
    OWNER_FIELD,
    SPARSE,
    Hit,
    PointIn,
    SparseVec,
    StoreLocked,
    StoreMismatch,
    Where,
    point_uuid,
)

T = TypeVar("T")
_META = "epmem-collection.json"


def _filter(owner_id: str, where: Where | None) -> qe.Filter:
    must: list[Any] = [qe.FieldCondition(key=OWNER_FIELD, match=qe.MatchValue(owner_id))]
    for key, value in (where or {}).items():
        match = qe.MatchAny(list(value)) if isinstance(value, list) else qe.MatchValue(value)
        must.append(qe.FieldCondition(key=key, match=match))
    return qe.Filter(must=must)


def _hit(point: Any, score: float = 0.0) -> Hit:
    payload = dict(point.payload or {})
    return Hit(key=str(payload.get(KEY_FIELD, point.id)), payload=payload, score=float(score))


class EdgeStore:
    """VectorStore on Qdrant Edge shards in ``root`` (one sub-folder per collection)."""

    def __init__(self, root: Path, owner_id: str) -> None:
        self.root = Path(root)
        self.owner_id = owner_id
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.root / ".lock", "a+")  # noqa: SIM115 - held for our lifetime
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise StoreLocked(
                f"the data folder {self.root.parent} is already open in another epmem process; "
                "stop it first (one process per data folder)"
            ) from None
        self._shards: dict[str, qe.EdgeShard] = {}
        self._io = asyncio.Lock()

    async def _run(self, fn: Callable[[], T]) -> T:
        async with self._io:
            return await asyncio.to_thread(fn)

    def _shard(self, name: str) -> qe.EdgeShard:
        try:
            return self._shards[name]
        except KeyError:
            raise KeyError(f"collection {name!r} is not open; call ensure_collection first") from None

    async def ensure_collection(self, name: str, dim: int, embedder: str) -> None:
        if name in self._shards:
            return
        path = self.root / name
        meta_path = path / _META
        wanted = {"embedder": embedder, "dim": dim}
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if meta != wanted:
                raise StoreMismatch(
                    f"collection {name!r} in {self.root} was built with {meta['embedder']} "
                    f"({meta['dim']}-d), not {embedder} ({dim}-d); run `epmem reindex` to rebuild it"
                )

        def open_shard() -> qe.EdgeShard:
            if meta_path.exists():
                return qe.EdgeShard.load(str(path))
            config = qe.EdgeConfig(
                vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
                sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
                wal_enabled=False,
            )
            shard = qe.EdgeShard.create(str(path), config)
            shard.update(
                qe.UpdateOperation.create_field_index(OWNER_FIELD, qe.KeywordIndexParams(is_tenant=True))
            )
            shard.flush()
            meta_path.write_text(json.dumps(wanted))
            return shard

        self._shards[name] = await self._run(open_shard)

    async def upsert(self, collection: str, points: list[PointIn]) -> None:
        if not points:
            return
        shard = self._shard(collection)
        edge_points = []
        for p in points:
            vector: dict[str, Any] = {}
            if p.dense is not None:
                vector[DENSE] = [float(x) for x in p.dense]
            if p.sparse is not None and p.sparse.indices:
                vector[SPARSE] = qe.SparseVector(p.sparse.indices, p.sparse.values)
            payload = {**p.payload, KEY_FIELD: p.key, OWNER_FIELD: self.owner_id}
            edge_points.append(qe.Point(point_uuid(self.owner_id, collection, p.key), vector, payload))

        def write() -> None:
            shard.update(qe.UpdateOperation.upsert_points(edge_points))
            shard.flush()

        await self._run(write)

    async def delete(self, collection: str, keys: list[str]) -> None:
        shard = self._shard(collection)
        ids: list[Any] = [point_uuid(self.owner_id, collection, k) for k in keys]

        def write() -> None:
            shard.update(qe.UpdateOperation.delete_points(ids))
            shard.flush()

        await self._run(write)

    async def delete_where(self, collection: str, where: Where) -> None:
        shard = self._shard(collection)
        flt = _filter(self.owner_id, where)

        def write() -> None:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            shard.flush()

        await self._run(write)

    async def retrieve(self, collection: str, keys: list[str]) -> list[Hit]:
        shard = self._shard(collection)
        ids: list[Any] = [point_uuid(self.owner_id, collection, k) for k in keys]
        records = await self._run(lambda: shard.retrieve(ids, with_payload=True, with_vector=False))
        return [_hit(r) for r in records]

    async def _query(self, collection: str, query: Any, limit: int, where: Where | None) -> list[Hit]:
        shard = self._shard(collection)
        request = qe.QueryRequest(
            limit=limit,
            query=query,
            filter=_filter(self.owner_id, where),
            with_payload=True,
            params=qe.SearchParams(exact=True),
        )
        points = await self._run(lambda: shard.query(request))
        return [_hit(p, p.score) for p in points]

    async def query_dense(
        self, collection: str, vector: npt.NDArray[np.float32], limit: int, where: Where | None = None
    ) -> list[Hit]:
        query = qe.Query.Nearest([float(x) for x in vector], using=DENSE)
        return await self._query(collection, query, limit, where)

    async def query_sparse(
        self, collection: str, vector: SparseVec, limit: int, where: Where | None = None
    ) -> list[Hit]:
        if not vector.indices:
            return []
        query = qe.Query.Nearest(qe.SparseVector(vector.indices, vector.values), using=SPARSE)
        return await self._query(collection, query, limit, where)

    async def scroll(self, collection: str, where: Where | None = None) -> list[Hit]:
        shard = self._shard(collection)
        flt = _filter(self.owner_id, where)

        def read_all() -> list[Hit]:
            out: list[Hit] = []
            offset: Any = None
            while True:
                records, offset = shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=512, filter=flt, with_payload=True, with_vector=False)
                )
                out.extend(_hit(r) for r in records)
                if offset is None:
                    return out

        return await self._run(read_all)

    async def count(self, collection: str, where: Where | None = None) -> int:
        shard = self._shard(collection)
        request = qe.CountRequest(filter=_filter(self.owner_id, where), exact=True)
        return await self._run(lambda: shard.count(request))

    async def compact(self) -> None:
        def work() -> None:
            for shard in self._shards.values():
                shard.flush()
                shard.optimize()
                shard.flush()

        await self._run(work)

    async def close(self) -> None:
        shards, self._shards = self._shards, {}

        def work() -> None:
            for shard in shards.values():
                shard.flush()
                shard.close()

        if shards:
            await self._run(work)
        if not self._lock_file.closed:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
            self._lock_file.close()


