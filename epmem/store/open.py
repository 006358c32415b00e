"""Choosing the engine: Qdrant Edge in the data folder, or a Qdrant server when a URL is set;
either way, optionally a replica of a vector log shared by several workers."""

from __future__ import annotations

from pathlib import Path

from epmem.db.base import Database
from epmem.store.base import VectorStore


def open_store(
    folder: Path,
    owner_id: str,
    url: str | None = None,
    api_key: str | None = None,
    log: Database | Path | str | None = None,
) -> VectorStore:
    """Edge by default (embedded, one process per data folder); ``url``: a server or cluster.
    ``log``: a database (connected, or a path or ``postgresql://`` URL) holding the vector log
    several workers share; the Edge folder is then this worker's replica of it (a server needs
    no replica: it is shared already, so both together are refused)."""
    if url and log is not None:
        raise ValueError("a Qdrant server is shared already: give a server URL or a vector log, not both")
    if url:
        from epmem.store.qdrant_server import QdrantServerStore

        return QdrantServerStore(owner_id, url=url, api_key=api_key)
    from epmem.store.edge import EdgeStore

    local = EdgeStore(folder, owner_id)
    if log is None:
        return local
    from epmem.store.replicated import ReplicatedStore

    return ReplicatedStore(local, log, folder)
