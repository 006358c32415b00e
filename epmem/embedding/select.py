"""Which dense embedder a deployment uses, by name (``EPMEM_EMBEDDER``)."""

from __future__ import annotations

from .base import Embedder
from .minilm import EmbedderUnavailable

EMBEDDERS = ("bilingual", "minilm", "wordllama", "openai")


def make_embedder(
    kind: str, model: str | None = None, base_url: str | None = None, api_key: str | None = None
) -> Embedder:
    """Name -> embedder: ``bilingual`` (default: MiniLM, and USE multilingual for text with Chinese,
    Japanese or Korean: epmem/embedding/bilingual.py), ``minilm``, ``wordllama``, or ``openai``
    (needs a model)."""
    if kind == "bilingual":
        from .bilingual import BilingualEmbedder

        return BilingualEmbedder(make_embedder("minilm"))
    if kind == "minilm":
        from .minilm import default_embedder
        from .threads import SmallBatchesSingleThreaded

        return SmallBatchesSingleThreaded(default_embedder())
    if kind == "wordllama":
        from .wordllama_embedder import WordLlamaEmbedder

        return WordLlamaEmbedder()
    if kind == "openai":
        if not model:
            raise EmbedderUnavailable("the openai embedder needs a model (EPMEM_EMBEDDING_MODEL)")
        from .openai_embedder import OpenAIEmbedder

        return OpenAIEmbedder(model, base_url, api_key)
    raise EmbedderUnavailable(f"unknown embedder {kind!r}; use bilingual, minilm, wordllama or openai")
