"""Where vectors live: one small seam (``base.VectorStore``), Qdrant Edge in the data folder by
default (``edge``), a Qdrant server when a URL is set (``qdrant_server``); ``open_store`` picks."""

from epmem.store.base import Hit, PointIn, StoreCorrupted, StoreLocked, StoreMismatch, StoreUnreachable, VectorStore
from epmem.store.open import open_store

__all__ = [
    "Hit",
    "PointIn",
    "StoreCorrupted",
    "StoreLocked",
    "StoreMismatch",
    "StoreUnreachable",
    "VectorStore",
    "open_store",
]
