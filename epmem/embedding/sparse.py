"""BM25 term weights for the sparse half of hybrid retrieval.

The term frequencies are computed here, on the client side; the IDF half is applied by the
engine (the collection's sparse vector has Qdrant's IDF modifier), so weights stay correct as
the corpus grows without re-embedding anything.
"""

from __future__ import annotations

import qdrant_edge as qe

from epmem.store.base import SparseVec


class Bm25Encoder:
    """Qdrant's own BM25 tokenizer and weighting (English stemming and stop-words)."""

    def __init__(self, avg_len: float = 12.0) -> None:
        self.avg_len = avg_len
        self._model = qe.Bm25(qe.Bm25Config(avg_len=avg_len))

    def document(self, text: str) -> SparseVec:
        v = self._model.embed_document(text)
        return SparseVec(list(v.indices), list(v.values))

    def query(self, text: str) -> SparseVec:
        v = self._model.embed_query(text)
        return SparseVec(list(v.indices), list(v.values))
