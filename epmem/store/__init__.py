"""Where vectors live: one small seam (``base.VectorStore``), Qdrant Edge in the data folder by
default (``edge``), a Qdrant server when a URL is set (``qdrant_server``); ``open_store`` picks.
Workers sharing one memory without a server: each an Edge replica of a vector log in their
shared database (``replicated``; ``open_store(..., log=...)``)."""

from epmem.store.base import Hit, PointIn, StoreCorrupted, StoreLocked, StoreMismatch, StoreUnreachable, VectorStore
from epmem.store.open import open_store
from epmem.store.replicated import MIGRATIONS as VECTOR_LOG_MIGRATIONS
from epmem.store.replicated import ReplicaDiverged, ReplicatedStore

__all__ = [
    "VECTOR_LOG_MIGRATIONS",
    "Hit",
    "PointIn",
    "ReplicaDiverged",
    "ReplicatedStore",
    "StoreCorrupted",
    "StoreLocked",
    "StoreMismatch",
    "StoreUnreachable",
    "VectorStore",
    "open_store",
]
