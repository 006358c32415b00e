"""The post-generation check: does a reply say something a denied fact says?

The reply model never sees a denied fact, so this check is defence in depth, not the safety
boundary. It catches what the boundary cannot: a model that *confirms* an asker's guess ("Yes,
she got a retention bonus!") with words it took from the question, a persona that mentions a
secret, or a misbehaving endpoint. A hit does not need to prove a leak; it only has to make
the engine fall back to the rules composer, whose reply is built from allowed facts alone.

"Distinctive" is measured against what the audience may hear: words and word pairs of a denied
fact that also occur in the allowed facts shown to the model (or are names of the people in
the conversation) prove nothing, so they are subtracted first. What remains is flagged when

- a pair of adjacent content words of the denied fact (not both allowed) appears in the reply;
- or two content words of it appear;
- or one rare content word appears: one with a digit (two characters or more: "4,800" -> "800"),
  a capitalized word inside the sentence (a name: "Lisbon", "Atlas"), or a long word (9+ letters);
- or one content word appears that the asker used too: "What about the deposit?" answered with
  anything that says "deposit" is how a model confirms a guess, so a word of a denied fact that
  the asker probed with counts alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from epmem.textnorm import STOPWORDS, ngrams, words

RARE_LENGTH = 9


@dataclass(frozen=True, slots=True)
class Overlap:
    """One denied fact the reply overlaps, with the evidence (for the audit)."""

    fact_id: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Denied:
    fact_id: str
    text: str


def _rare_words(text: str) -> set[str]:
    """Words that are rare by form: digits, capitalized inside a sentence, long."""
    rare: set[str] = set()
    raw = text.split()
    for i, chunk in enumerate(raw):
        for w in words(chunk):
            if any(c.isdigit() for c in w) and len(w) >= 2:
                rare.add(w)
            elif len(w) >= RARE_LENGTH and w not in STOPWORDS:
                rare.add(w)
        stripped = chunk.strip("\"'“‘(")
        if i > 0 and stripped[:1].isupper() and not raw[i - 1].endswith((".", "!", "?", ":")):
            rare.update(w for w in words(stripped) if w not in STOPWORDS)
    return rare


class ReplyGuard:
    """Built once per reply from the allowed material; checks the reply against denied facts."""

    def __init__(
        self, allowed_texts: Iterable[str], ignore_words: Iterable[str] = (), asked: Iterable[str] = ()
    ) -> None:
        self._asked: set[str] = set(words(" ".join(asked)))
        self._allowed_words: set[str] = set(words(" ".join(ignore_words)))
        self._allowed_pairs: set[tuple[str, ...]] = set()
        for text in allowed_texts:
            tokens = words(text)
            self._allowed_words.update(tokens)
            self._allowed_pairs |= ngrams(tokens, 2)

    def check(self, reply: str, denied: Sequence[Denied]) -> list[Overlap]:
        reply_tokens = words(reply)
        reply_words = set(reply_tokens)
        reply_pairs = ngrams(reply_tokens, 2)
        hits: list[Overlap] = []
        for fact in denied:
            evidence = self._evidence(fact.text, reply_words, reply_pairs)
            if evidence:
                hits.append(Overlap(fact.fact_id, evidence))
        return hits

    def _evidence(self, text: str, reply_words: set[str], reply_pairs: set[tuple[str, ...]]) -> tuple[str, ...]:
        tokens = words(text)
        pairs = {
            p
            for p in ngrams(tokens, 2)
            if p not in self._allowed_pairs
            and all(w not in STOPWORDS for w in p)
            and any(w not in self._allowed_words for w in p)
        }
        shared_pairs = sorted(" ".join(p) for p in pairs & reply_pairs)
        if shared_pairs:
            return tuple(shared_pairs)
        content = {w for w in tokens if w not in STOPWORDS and w not in self._allowed_words and len(w) > 1}
        shared = content & reply_words
        if len(shared) >= 2:
            return tuple(sorted(shared))
        single = shared & (_rare_words(text) | self._asked)
        return tuple(sorted(single))
