"""Dense embedders; ``default_embedder()`` is the one the store should use."""

from .base import Embedder, Vectors
from .cross_encoder import CrossEncoder, CrossEncoderUnavailable, shared_cross_encoder
from .late_interaction import LateInteraction, LateInteractionUnavailable, shared_late_interaction
from .minilm import EmbedderUnavailable, MiniLMEmbedder, default_embedder
from .select import make_embedder
from .wheels import MODEL_WHEELS, ModelWheel

__all__ = [
    "CrossEncoder",
    "CrossEncoderUnavailable",
    "shared_cross_encoder",
    "LateInteraction",
    "LateInteractionUnavailable",
    "shared_late_interaction",
    "default_embedder",
    "Embedder",
    "EmbedderUnavailable",
    "make_embedder",
    "MiniLMEmbedder",
    "Vectors",
    "MODEL_WHEELS",
    "ModelWheel",
]
