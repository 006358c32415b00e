"""Choosing the engine: Qdrant Edge in the data folder, or a Qdrant server when a URL is set."""

from __future__ import annotations

from pathlib import Path

from epmem.store.base import VectorStore


def open_store(folder: Path, owner_id: str, url: str | None = None, api_key: str | None = None) -> VectorStore:
    """Edge by default (embedded, one process per data folder); ``url``: a server or cluster."""
    if url:
        from epmem.store.qdrant_server import QdrantServerStore

        return QdrantServerStore(owner_id, url=url, api_key=api_key)
    from epmem.store.edge import EdgeStore

    return EdgeStore(folder, owner_id)
