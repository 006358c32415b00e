"""The storage seam: the few vector-store operations the memory needs, and nothing else.

Two engines implement it (Qdrant Edge in-process, qdrant-client for a server) and must pass the
same contract tests. Keeping the seam this small is what makes a second engine cheap; the
memory layer never sees an engine's own model classes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

#: payload field that scopes every point to one owner (a tenant index in both engines).
OWNER_FIELD = "owner_id"
#: payload field holding our own string id; engines need UUIDs or integers as point ids.
KEY_FIELD = "key"
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


class StoreLocked(RuntimeError):
    """Another process already has this data folder open."""


class StoreMismatch(RuntimeError):
    """The data folder was built with another embedder; the vectors cannot be compared."""


class VectorStore(Protocol):
    owner_id: str

    async def ensure_collection(self, name: str, dim: int, embedder: str) -> None: ...

    async def upsert(self, collection: str, points: list[PointIn]) -> None: ...

    async def delete(self, collection: str, keys: list[str]) -> None: ...

    async def delete_where(self, collection: str, where: Where) -> None: ...

    async def retrieve(self, collection: str, keys: list[str]) -> list[Hit]: ...

    async def query_dense(
        self, collection: str, vector: npt.NDArray[np.float32], limit: int, where: Where | None = None
    ) -> list[Hit]: ...

    async def query_sparse(
        self, collection: str, vector: SparseVec, limit: int, where: Where | None = None
    ) -> list[Hit]: ...

    async def scroll(self, collection: str, where: Where | None = None) -> list[Hit]: ...

    async def count(self, collection: str, where: Where | None = None) -> int: ...

    async def compact(self) -> None:
        """Make deletions physical: after this, forgotten payloads are gone from disk."""
        ...

    async def close(self) -> None: ...
