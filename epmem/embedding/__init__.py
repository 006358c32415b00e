"""Dense embedders; ``default_embedder()`` is the one the store should use."""

from .base import Embedder, Vectors
from .minilm import EmbedderUnavailable, MiniLMEmbedder, default_embedder
from .select import make_embedder

__all__ = [
    "default_embedder", "Embedder", "EmbedderUnavailable", "make_embedder", "MiniLMEmbedder", "Vectors",
]
