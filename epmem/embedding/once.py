"""Each text embedded once per import: a text -> vector cache scoped to one run.

An import used to embed each statement six or seven times: the classifier read it, the
finalizer asked the store for its neighbours twice (retold covers, event links), the distiller
twice more (twin news, word-for-word twins), and the store upsert embedded it again. Inside
:func:`embedding_once` every :func:`embed` call answers a text it has seen from the vector it
got the first time, and embeds only the texts it has not seen, in one batch.

A text's vector is the one from the batch it was first embedded in. MiniLM's vector for a text
changes in its last bits with the batch around it (up to ~1.7e-7), so an import with the cache
stores vectors that may differ in those bits from one without it, or from an import stopped
and resumed (whose first batches differ); results that could depend on them are ordered by id
where scores tie (epmem/memory/recall.py ``FactMemory.similar``). Within one run the same text
has one vector everywhere, so equal texts tie exactly.

The scope is a context variable: it covers the coroutine that opened it, what it awaits, and
the worker threads it starts with ``asyncio.to_thread``; other tasks (a reply being composed
while an import runs) embed as before. Scopes nest: an inner one uses the outer cache.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from .base import Embedder, Vectors

#: distinct texts one scope keeps (384-d float32: ~1.5 KB each, so ~150 MB at most); texts
#: first seen after that are embedded each time they are asked, as without the cache.
MAX_TEXTS = 100_000


class VectorCache:
    """Vectors by (embedder, text) for one scope. Thread-safe: one embedding at a time, so the
    first batch a text appears in is the same however the scope's threads interleave."""

    def __init__(self, max_texts: int = MAX_TEXTS) -> None:
        self.max_texts = max_texts
        self._rows: dict[tuple[int, str], np.ndarray] = {}
        self._embedders: dict[int, Embedder] = {}  # keeps each id() valid while the scope lives
        self._lock = threading.Lock()
        #: texts sent to an embedder, and texts answered from the cache (tests and benchmarks).
        self.embedded = 0
        self.reused = 0

    def __len__(self) -> int:
        return len(self._rows)

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> Vectors:
        key = id(embedder)
        with self._lock:
            self._embedders.setdefault(key, embedder)
            missing = list(dict.fromkeys(t for t in texts if (key, t) not in self._rows))
            fresh: dict[str, np.ndarray] = {}
            if missing:
                vectors = embedder.embed(missing)
                self.embedded += len(missing)
                for text, row in zip(missing, vectors):
                    fresh[text] = row
                    if len(self._rows) < self.max_texts:
                        self._rows[(key, text)] = np.array(row, dtype=np.float32)  # a copy, not a view
            self.reused += len(texts) - len(missing)
            out = np.empty((len(texts), embedder.dim), dtype=np.float32)
            for i, text in enumerate(texts):
                row = fresh.get(text)
                out[i] = self._rows[(key, text)] if row is None else row
            return out


_ACTIVE: ContextVar[VectorCache | None] = ContextVar("epmem_vector_cache", default=None)


def active() -> VectorCache | None:
    """The cache of the scope this code runs in, if any."""
    return _ACTIVE.get()


@contextmanager
def embedding_once(max_texts: int = MAX_TEXTS) -> Iterator[VectorCache]:
    """Within this block (and what it awaits or hands to ``asyncio.to_thread``) each text is
    embedded once. Inside another such block, the outer cache is used."""
    current = _ACTIVE.get()
    if current is not None:
        yield current
        return
    cache = VectorCache(max_texts)
    token = _ACTIVE.set(cache)
    try:
        yield cache
    finally:
        _ACTIVE.reset(token)


def embed(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """``embedder.embed(texts)``, from the active scope's cache when there is one."""
    cache = _ACTIVE.get()
    if cache is None:
        return embedder.embed(list(texts))
    return cache.embed(embedder, texts)
