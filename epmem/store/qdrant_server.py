"""The same seam over qdrant-client's AsyncQdrantClient: a Qdrant server or cluster.

Selected when ``EPMEM_QDRANT_URL`` is set. Collections are shared by every owner of the
deployment (``epmem_<name>``), each point carrying the owner id in a tenant-indexed payload
field, which is how one cluster serves many delegates. The embedder a collection was built
with is stored as collection metadata, so a mismatch is caught on any worker that opens it.

The contract tests run this adapter against qdrant-client's local mode (``path=`` or
``:memory:``), which executes the same client API in-process; local mode ignores payload
indexes and blocks the loop, which is fine for tests and never used in production.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from epmem.store.base import (
    DENSE,
    INDEXED_FIELDS,
    KEY_FIELD,
    OWNER_FIELD,
    SPARSE,
    Hit,
    Hybrid,
    PointIn,
    SparseVec,
    StoreLocked,
    StoreMismatch,
    StoreUnreachable,
    Where,
    point_uuid,
)

#: qdrant-client checks the server's version from a thread of its own and warns, over two lines,
#: when the server does not answer; the first call then says so in one (``_answering``).
warnings.filterwarnings("ignore", message="Failed to obtain server version", category=UserWarning)
#: and an API key over plain HTTP: the compose set-up's private network (docker/compose.yaml);
#: `epmem doctor` says it once, as a line of its own, for an address that is not private.
warnings.filterwarnings("ignore", message="Api key is used with an insecure connection", category=UserWarning)

PREFIX = "epmem_"
_BATCH = 256


def _filter(owner_id: str, where: Where | None) -> models.Filter:
    must: list[Any] = [models.FieldCondition(key=OWNER_FIELD, match=models.MatchValue(value=owner_id))]
    for key, value in (where or {}).items():
        match: Any = models.MatchAny(any=list(value)) if isinstance(value, list) else models.MatchValue(value=value)
        must.append(models.FieldCondition(key=key, match=match))
    return models.Filter(must=must)


def _hit(point: Any, score: float = 0.0) -> Hit:
    payload = dict(point.payload or {})
    return Hit(key=str(payload.get(KEY_FIELD, point.id)), payload=payload, score=float(score))


class QdrantServerStore:
    """VectorStore on a Qdrant server (``url``) or qdrant-client local mode (``path``/``:memory:``)."""

    def __init__(
        self,
        owner_id: str,
        url: str | None = None,
        api_key: str | None = None,
        path: Path | None = None,
        timeout: int = 30,
    ) -> None:
        self.owner_id = owner_id
        self._open: set[str] = set()
        self._where = url or str(path or ":memory:")
        #: local mode warns that payload indexes and search params do nothing there
        self._server = bool(url)
        try:
            if url:
                self.client = AsyncQdrantClient(url=url, api_key=api_key, timeout=timeout)
            elif path is not None:
                self.client = AsyncQdrantClient(path=str(path))
            else:
                self.client = AsyncQdrantClient(location=":memory:")
        except RuntimeError as exc:
            if "already accessed" in str(exc):
                raise StoreLocked(
                    f"the data folder {path} is already open in another epmem process; stop it first"
                ) from None
            raise

    @contextlib.contextmanager
    def _answering(self) -> Iterator[None]:
        """The first calls to a server: one that does not answer, or refuses our key, is a
        one-line :class:`StoreUnreachable` naming it (not qdrant-client's traceback). Later
        calls keep their own errors: a server that went away mid-run is not a setting to fix."""
        try:
            yield
        except ResponseHandlingException as exc:
            raise StoreUnreachable(f"cannot reach the Qdrant server at {self._where}: {exc}") from None
        except UnexpectedResponse as exc:
            if exc.status_code in (401, 403):
                raise StoreUnreachable(
                    f"the Qdrant server at {self._where} refused the API key (HTTP {exc.status_code})"
                ) from None
            raise

    @staticmethod
    def _name(collection: str) -> str:
        return PREFIX + collection

    def _check_open(self, collection: str) -> str:
        if collection not in self._open:
            raise KeyError(f"collection {collection!r} is not open; call ensure_collection first")
        return self._name(collection)

    def _exact(self) -> models.SearchParams | None:
        """Exact search on a server: filtered memory queries must not lose recall to HNSW."""
        return models.SearchParams(exact=True) if self._server else None

    async def ensure_collection(self, name: str, dim: int, embedder: str) -> None:
        if name in self._open:
            return
        full = self._name(name)
        wanted = {"embedder": embedder, "dim": dim}
        with self._answering():
            exists = await self.client.collection_exists(full)
        if exists:
            info = await self.client.get_collection(full)
            meta = dict(info.config.metadata or {})
            if {k: meta.get(k) for k in wanted} != wanted:
                raise StoreMismatch(
                    f"collection {full!r} at {self._where} was built with {meta.get('embedder')} "
                    f"({meta.get('dim')}-d), not {embedder} ({dim}-d); run `epmem reindex` to rebuild it"
                )
        else:
            await self.client.create_collection(
                full,
                vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                metadata=wanted,
            )
            if self._server:
                await self.client.create_payload_index(
                    full,
                    OWNER_FIELD,
                    field_schema=models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
                )
                for field in INDEXED_FIELDS:
                    await self.client.create_payload_index(full, field, field_schema=models.PayloadSchemaType.KEYWORD)
        self._open.add(name)

    async def upsert(self, collection: str, points: list[PointIn]) -> None:
        full = self._check_open(collection)
        structs = []
        for p in points:
            vector: dict[str, Any] = {}
            if p.dense is not None:
                vector[DENSE] = np.asarray(p.dense, dtype=np.float32).tolist()
            if p.sparse is not None and p.sparse.indices:
                vector[SPARSE] = models.SparseVector(indices=p.sparse.indices, values=p.sparse.values)
            payload = {**p.payload, KEY_FIELD: p.key, OWNER_FIELD: self.owner_id}
            structs.append(
                models.PointStruct(id=point_uuid(self.owner_id, collection, p.key), vector=vector, payload=payload)
            )
        for i in range(0, len(structs), _BATCH):
            await self.client.upsert(full, structs[i : i + _BATCH], wait=True)

    async def delete(self, collection: str, keys: list[str]) -> None:
        full = self._check_open(collection)
        ids: list[Any] = [point_uuid(self.owner_id, collection, k) for k in keys]
        await self.client.delete(full, points_selector=models.PointIdsList(points=ids), wait=True)

    async def delete_where(self, collection: str, where: Where) -> None:
        full = self._check_open(collection)
        selector = models.FilterSelector(filter=_filter(self.owner_id, where))
        await self.client.delete(full, points_selector=selector, wait=True)

    async def retrieve(self, collection: str, keys: list[str]) -> list[Hit]:
        full = self._check_open(collection)
        ids: list[Any] = [point_uuid(self.owner_id, collection, k) for k in keys]
        records = await self.client.retrieve(full, ids, with_payload=True, with_vectors=False)
        # a uuid5 of another owner's key can never collide, but the filter is the contract
        return [_hit(r) for r in records if (r.payload or {}).get(OWNER_FIELD) == self.owner_id]

    async def _query(
        self,
        collection: str,
        query: Any,
        using: str,
        limit: int,
        where: Where | None,
        fields: tuple[str, ...] | None = None,
    ) -> list[Hit]:
        full = self._check_open(collection)
        result = await self.client.query_points(
            full,
            query=query,
            using=using,
            limit=limit,
            query_filter=_filter(self.owner_id, where),
            with_payload=True if fields is None else [KEY_FIELD, *fields],
            search_params=self._exact(),
        )
        return [_hit(p, p.score) for p in result.points]

    async def query_dense(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        limit: int,
        where: Where | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> list[Hit]:
        return await self._query(collection, np.asarray(vector, dtype=np.float32).tolist(), DENSE, limit, where, fields)

    async def query_dense_many(
        self,
        collection: str,
        vectors: Sequence[npt.NDArray[np.float32]],
        limit: int,
    ) -> list[list[Hit]]:
        """One search after another (the server answers each over its own connection anyway)."""
        return [await self.query_dense(collection, v, limit) for v in vectors]

    async def query_sparse(
        self, collection: str, vector: SparseVec, limit: int, where: Where | None = None
    ) -> list[Hit]:
        if not vector.indices:
            return []
        sparse = models.SparseVector(indices=vector.indices, values=vector.values)
        return await self._query(collection, sparse, SPARSE, limit, where)

    async def query_hybrid(self, collection: str, query: Hybrid, where: Where | None = None) -> list[Hit]:
        full = self._check_open(collection)
        flt = _filter(self.owner_id, where)
        exact = self._exact()
        prefetches: list[models.Prefetch] = []
        weights: list[float] = []
        if query.dense is not None and query.dense_weight > 0:
            prefetches.append(
                models.Prefetch(
                    query=np.asarray(query.dense, dtype=np.float32).tolist(),
                    using=DENSE,
                    limit=query.prefetch,
                    filter=flt,
                    params=exact,
                )
            )
            weights.append(query.dense_weight)
        if query.sparse is not None and query.sparse.indices and query.sparse_weight > 0:
            sparse = models.SparseVector(indices=query.sparse.indices, values=query.sparse.values)
            prefetches.append(
                models.Prefetch(query=sparse, using=SPARSE, limit=query.prefetch, filter=flt, params=exact)
            )
            weights.append(query.sparse_weight)
        if not prefetches:
            return []
        result = await self.client.query_points(
            full,
            prefetch=prefetches,
            query=models.RrfQuery(rrf=models.Rrf(k=query.rrf_k, weights=weights)),
            limit=query.limit,
            query_filter=flt,
            with_payload=True if query.fields is None else [KEY_FIELD, *query.fields],
        )
        return [_hit(p, p.score) for p in result.points]

    async def scroll(self, collection: str, where: Where | None = None) -> list[Hit]:
        full = self._check_open(collection)
        out: list[Hit] = []
        offset: Any = None
        while True:
            records, offset = await self.client.scroll(
                full,
                scroll_filter=_filter(self.owner_id, where),
                limit=512,
                offset=offset,
                with_payload=True,
                with_vectors=False,
            )
            out.extend(_hit(r) for r in records)
            if offset is None:
                return out

    async def count(self, collection: str, where: Where | None = None) -> int:
        full = self._check_open(collection)
        result = await self.client.count(full, count_filter=_filter(self.owner_id, where), exact=True)
        return int(result.count)

    async def compact(self) -> None:
        """A server vacuums deleted points itself; deletions are already invisible to every query."""

    async def recorded(self, name: str) -> dict[str, Any] | None:
        full = self._name(name)
        with self._answering():
            exists = await self.client.collection_exists(full)
        if not exists:
            return None
        return dict((await self.client.get_collection(full)).config.metadata or {})

    async def drop_collection(self, name: str) -> None:
        """Refused while other owners have points there: a shared collection is rebuilt by an
        operator, not by one tenant's command."""
        full = self._name(name)
        if not await self.client.collection_exists(full):
            return
        everyone = (await self.client.count(full, exact=True)).count
        mine = (await self.client.count(full, count_filter=_filter(self.owner_id, None), exact=True)).count
        if everyone != mine:
            raise RuntimeError(
                f"collection {full!r} at {self._where} holds other owners' points; rebuild it for every owner at once"
            )
        await self.client.delete_collection(full)
        self._open.discard(name)

    async def close(self) -> None:
        self._open.clear()
        await self.client.close()
