"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama, TEI...).

An option, never the default: the delegate must work offline. The endpoint and model are part
of the recorded embedder name, so pointing a data folder at another model is caught on start
and answered with `epmem reindex`. Timeouts and retries are explicit (the openai package's
defaults are 600 s and 2 retries).
"""

from __future__ import annotations

import numpy as np

from .base import Vectors
from .minilm import EmbedderUnavailable

BATCH = 128


class OpenAIEmbedder:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        import openai

        self.model = model
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=max_retries
        )
        self.name = f"openai:{model}@{base_url or 'api.openai.com'}"
        self.dim = dim or int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str]) -> Vectors:
        import openai

        rows: list[list[float]] = []
        for i in range(0, len(texts), BATCH):
            try:
                response = self._client.embeddings.create(model=self.model, input=texts[i : i + BATCH])
            except openai.OpenAIError as exc:
                raise EmbedderUnavailable(f"embedding endpoint failed for model {self.model!r}: {exc}") from exc
            rows.extend(d.embedding for d in sorted(response.data, key=lambda d: d.index))
        if not rows:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        out = np.asarray(rows, dtype=np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out
