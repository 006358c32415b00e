"""Dense embedders; ``default_embedder()`` is the one the store should use."""

from .base import Embedder, Vectors
from .minilm import EmbedderUnavailable, MiniLMEmbedder, default_embedder

__all__ = ["Embedder", "EmbedderUnavailable", "MiniLMEmbedder", "Vectors", "default_embedder"]
