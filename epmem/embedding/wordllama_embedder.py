"""WordLlama 256-d: static token embeddings, ~100x faster than MiniLM, weights in its wheel.

Measured against MiniLM on LoCoMo (``epmem bench locomo ... --embedder wordllama``, same 1,536
questions, same hybrid retrieval): session Recall@10 0.927 vs 0.934, turn Recall@10 0.696 vs
0.727, dense-only turn Recall@10 0.456 vs 0.479; ingest ~50x faster (6 s vs 308 s for 5,882
turns on a loaded 2-core machine). MiniLM stays the default: recall is what the delegate is
for, and only MiniLM clears turn Recall@10 0.70.
``WordLlama.load()`` looks for the tokenizer in the wrong folder and tries a hub download; the
package folder as cache with downloads disabled works offline.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import Vectors
from .minilm import EmbedderUnavailable


class WordLlamaEmbedder:
    dim = 256

    def __init__(self) -> None:
        try:
            import wordllama
        except ImportError as exc:
            raise EmbedderUnavailable("wordllama is not installed; run: pip install 'wordllama>=0.4'") from exc
        self._model = wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent, disable_download=True, dim=self.dim
        )
        self.name = f"wordllama-l2-supercat-{self.dim}@{getattr(wordllama, '__version__', '0')}"

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.asarray(self._model.embed(list(texts), norm=True), dtype=np.float32)
        return out.reshape(len(texts), self.dim)
