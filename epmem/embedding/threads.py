"""One BLAS thread for a question-sized batch.

OpenBLAS parallelises every matrix product over all cores. For one sentence the products are
too small to gain from it, and when the cores are busy (other chats, an import, other
processes) its threads wait for each other: on this 2-core machine under load, embedding one
question took 332 ms at p50 with the default threads and 9 ms with one. Large batches (an
import) keep every thread.
"""

from __future__ import annotations

from threadpoolctl import ThreadpoolController

from .base import Embedder, Vectors

_controller: ThreadpoolController | None = None


def _blas() -> ThreadpoolController:
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller


class SmallBatchesSingleThreaded:
    """An embedder whose batches of at most ``small`` texts run on one BLAS thread."""

    def __init__(self, inner: Embedder, small: int = 4) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.small = small

    def embed(self, texts: list[str]) -> Vectors:
        if len(texts) > self.small:
            return self.inner.embed(texts)
        with _blas().limit(limits=1, user_api="blas"):
            return self.inner.embed(texts)
