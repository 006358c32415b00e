"""The dense-embedding seam: every embedder turns texts into unit-length float32 rows."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised vectors; ``name`` is recorded with each collection so a
    restart with a different embedder is caught instead of silently mixing vector spaces."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> Vectors:
        """Shape (len(texts), dim), float32, each row L2-normalised."""
        ...


def readings(embedder: Embedder, text: str) -> Vectors:
    """The vectors ``text`` is searched with: one per model that reads it, where the embedder
    has several (:meth:`epmem.embedding.bilingual.BilingualEmbedder.readings`), else its one
    embedding. A hit's score is its best over them."""
    read = getattr(embedder, "readings", None)
    return read(text) if callable(read) else embedder.embed([text])
