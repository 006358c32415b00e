"""The storage seam: the few vector-store operations the memory needs, and nothing else.

Two engines implement it (Qdrant Edge in-process, qdrant-client for a server) and must pass the
same contract tests. Keeping the seam this small is what makes a second engine cheap; the
memory layer never sees an engine's own model classes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from epmem.errors import EpmemError

#: payload field that scopes every point to one owner (a tenant index in both engines).
OWNER_FIELD = "owner_id"
#: payload field holding our own string id; engines need UUIDs or integers as point ids.
KEY_FIELD = "key"
#: payload fields every collection indexes (keyword): filters on them (a session's turns, an
#: event's facts) must not scan every payload; at 50k facts an unindexed event filter took
#: longer than the rest of recall together.
INDEXED_FIELDS = ("session_id", "event_id")
DENSE = "dense"
SPARSE = "bm25"

_NAMESPACE = uuid.UUID("6f1d5c1e-3a8b-4f0e-9c53-0e7a2b9d4c11")

#: a filter: payload field -> a value or a list of values (any of them).
Where = dict[str, "str | int | bool | list[str]"]


def point_uuid(owner_id: str, collection: str, key: str) -> str:
    """Stable point id: re-importing the same thing overwrites instead of duplicating."""
    return str(uuid.uuid5(_NAMESPACE, f"{owner_id}\x1f{collection}\x1f{key}"))


@dataclass(frozen=True, slots=True)
class SparseVec:
    indices: list[int]
    values: list[float]


@dataclass(slots=True)
class PointIn:
    key: str
    payload: dict[str, Any]
    dense: npt.NDArray[np.float32] | None = None
    sparse: SparseVec | None = None


@dataclass(slots=True)
class Hit:
    key: str
    payload: dict[str, Any]
    score: float = 0.0
    dense: list[float] | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Hybrid:
    """One hybrid query: dense and BM25 candidates (``prefetch`` each), fused by weighted RRF.

    The weights are measured, not equal: on LoCoMo equal-weight RRF let BM25's exact-word
    matches push paraphrased evidence out of the top ranks (see benchmarks/locomo_bench.py).
    Either half may be missing; the other is then the whole ranking.
    """

    dense: npt.NDArray[np.float32] | None
    sparse: SparseVec | None
    limit: int
    prefetch: int = 100
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    rrf_k: int = 60
    #: payload fields to return (our key always comes back); None: the whole payload. Payload
    #: transfer is most of a 100-hit query's cost, and retrieval needs only a few fields.
    fields: tuple[str, ...] | None = None


def rrf_score(rank: int, weight: float, k: int) -> float:
    """Weighted RRF for 0-based ``rank``, the formula both Qdrant engines use: the weight
    divides the rank, so weight 2 counts a second place like a first place at weight 1."""
    if weight <= 0:
        return 0.0
    return 1.0 / ((rank + 1.0) / weight + k - 1.0)


class StoreLocked(EpmemError, RuntimeError):
    """Another process already has this data folder open."""


class StoreMismatch(EpmemError, RuntimeError):
    """The data folder was built with another embedder; the vectors cannot be compared."""


class StoreUnreachable(EpmemError, RuntimeError):
    """A Qdrant server does not answer (or refuses the API key): said in one line, no traceback."""


class StoreCorrupted(EpmemError, RuntimeError):
    """A collection's files are damaged: its metadata cannot be read, or the engine refuses them."""


class VectorStore(Protocol):
    owner_id: str

    async def ensure_collection(self, name: str, dim: int, embedder: str) -> None: ...

    async def upsert(self, collection: str, points: list[PointIn]) -> None: ...

    async def delete(self, collection: str, keys: list[str]) -> None: ...

    async def delete_where(self, collection: str, where: Where) -> None: ...

    async def retrieve(self, collection: str, keys: list[str]) -> list[Hit]: ...

    async def query_dense(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        limit: int,
        where: Where | None = None,
        fields: tuple[str, ...] | None = None,
    ) -> list[Hit]:
        """``fields``: the payload fields to return (our key always comes back); None: all."""
        ...

    async def query_dense_many(
        self,
        collection: str,
        vectors: Sequence[npt.NDArray[np.float32]],
        limit: int,
    ) -> list[list[Hit]]:
        """:meth:`query_dense` for each vector, in order: one round trip to the engine for a
        batch (an import asks for the neighbours of every fact of a session at once)."""
        ...

    async def query_sparse(
        self, collection: str, vector: SparseVec, limit: int, where: Where | None = None
    ) -> list[Hit]: ...

    async def query_hybrid(self, collection: str, query: Hybrid, where: Where | None = None) -> list[Hit]:
        """Dense and sparse prefetches fused by weighted RRF inside the engine."""
        ...

    async def scroll(self, collection: str, where: Where | None = None) -> list[Hit]: ...

    async def count(self, collection: str, where: Where | None = None) -> int: ...

    async def compact(self) -> None:
        """Make deletions physical: after this, forgotten payloads are gone from disk."""
        ...

    async def recorded(self, name: str) -> dict[str, Any] | None:
        """The embedder and dimension a collection was built with (None: no such collection)."""
        ...

    async def drop_collection(self, name: str) -> None:
        """Remove a collection and its files (``epmem reindex`` rebuilds it)."""
        ...

    async def close(self) -> None: ...
