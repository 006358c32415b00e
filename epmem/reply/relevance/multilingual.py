"""Reading a question the cross-encoder cannot read: one in another language than English.

The cross-encoder and the late-interaction model are English models. Asked "¿cuándo es la boda de
Fer?", the cross-encoder rates "Fernanda is getting married ... on 5 December" at -11.0, as
unrelated as anything, and the relevance step deflects every question put in Spanish,
Portuguese or Polish (on benchmarks/scenarios/multilingual, three storylines of
shared/bench/storylines-v2 with their questions put in the asker's language: completeness 0.15
where the English originals have 0.65). Recall already reads such a question with the
multilingual model (epmem/memory/recall.py, the facts' second collection); here the same model
stands in for the cross-encoder: its similarity of each part of the question to each fact,
put on the cross-encoder's scale, so that every rule and number of the relevance step reads it
as it reads the cross-encoder's logits.

The scale is not tuned on any reply: it is the straight line that takes the multilingual model's
median similarity of a question part to a fact that answers it, and to a fact that does not, to
the cross-encoder's medians for the same pairs, over every English set in gold mode
(``python -m benchmarks.tools.calibrate_multilingual``, which prints the four medians). Where a
question's own facts, most of them unrelated to it, sit lower than the English median of
unrelated facts (a language the model reads less closely), their median is where unrelated lies
for that question (:meth:`MultilingualReader._unrelated`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from epmem.embedding.base import Embedder
from epmem.embedding.bilingual import has_cjk, shared_use
from epmem.embedding.minilm import EmbedderUnavailable
from epmem.english_words import english_share, not_plainly_english

#: medians over the English sets' (question part, fact) pairs in gold mode (10 sets: 1612 pairs
#: where the fact answers, 4643 where it does not; benchmarks/tools/calibrate_multilingual.py).
ANSWERS_SIMILARITY = 0.382
UNRELATED_SIMILARITY = 0.164
ANSWERS_LOGIT = 2.74
UNRELATED_LOGIT = -10.51


def reads_other_language(question: str) -> bool:
    """A question the English models cannot read: Latin script with too few English function
    words ("Como foi a cirurgia da sua mãe?"), or kana or hangul with hardly any English beside
    it. A mix whose English carries the question ("지우 how's your halmeoni doing?") is English."""
    if not_plainly_english(question):
        return True
    return english_share(question) is None and has_cjk(question)


class MultilingualReader:
    """The cross-encoder's stand-in for a question in another language: the multilingual model's
    similarity, on the cross-encoder's logit scale (see the module docstring)."""

    name = "multilingual-reader"

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.slope = (ANSWERS_LOGIT - UNRELATED_LOGIT) / (ANSWERS_SIMILARITY - UNRELATED_SIMILARITY)

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        vectors = self.model.embed([question, *texts])
        similarity = np.asarray(vectors[1:] @ vectors[0], dtype=np.float32)
        logits: np.ndarray = UNRELATED_LOGIT + self.slope * (similarity - self._unrelated(similarity))
        return logits.astype(np.float32)

    @staticmethod
    def _unrelated(similarity: np.ndarray) -> float:
        """Where "unrelated" lies for this question: the English sets' median, or lower where
        the question's own facts say so. The model reads some languages less closely than
        others (a Polish question's answer scores 0.21 where a Spanish one's scores 0.34), and
        most facts read for a question are not about it, so their median is where unrelated lies
        in this language; never above the English median, and only over three facts or more
        (fewer say nothing of the rest)."""
        if len(similarity) < 3:
            return UNRELATED_SIMILARITY
        return min(UNRELATED_SIMILARITY, float(np.median(similarity)))


@lru_cache(maxsize=1)
def multilingual_reader() -> MultilingualReader | None:
    """The shared reader, or None where the multilingual model is not installed (the relevance
    step then weighs recall's scores alone, as with no cross-encoder)."""
    try:
        return MultilingualReader(shared_use())
    except EmbedderUnavailable:
        return None
