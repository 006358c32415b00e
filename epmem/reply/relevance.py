"""Which of the facts that may be said answer the question (and which are merely near it).

Recall finds facts *near* a question; a reply should tell the ones that *answer* it. This step
runs after adjudication, over the storyline alone (the facts the audience may know), so nothing
it decides can depend on a fact the asker may not know: a deflection reads the same whether a
secret exists or not (see epmem/reply/projection.py).

How it chooses, by the kind of question:

- an **open** question ("What is Lin up to?", "Catch me up"): every event the storyline has,
  best first, down to ``open_relative_cut`` of the best event's recall score;
- any other question (yes/no, when, where, who, what, how): each fact gets
  ``relevance = recall score + rerank_weight * sigmoid(cross-encoder logit / rerank_temperature)``;
  the best event answers, other events only when their best fact is within ``event_margin`` of
  it; and nothing is said below ``floor`` (then the asker gets the deflection).

The cross-encoder (epmem/embedding/cross_encoder.py) reads question and fact together; it reads
at most ``rerank_limit`` facts (the best by recall), so its cost is bounded per reply. Without
it (``rerank_weight = 0`` or no model), relevance is the recall score alone. The parameters
were picked on development scenarios only (benchmarks/tools/tune_relevance.py); the held-out
sets are reported, never tuned on.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from epmem.memory.recall import Recalled, RecalledEvent, is_catch_up
from epmem.reply.projection import FactDecision, Projection

QuestionKind = Literal["open", "yesno", "when", "where", "who", "what"]

_KIND_WORDS: tuple[tuple[QuestionKind, re.Pattern[str]], ...] = (
    ("when", re.compile(r"\b(when|what time|what date|which day|how long|how soon|until when)\b", re.I)),
    ("where", re.compile(r"\b(where|which (?:city|country|place|town))\b", re.I)),
    ("who", re.compile(r"\b(who|whom|whose|with whom)\b", re.I)),
    ("yesno", re.compile(r"^\s*(?:\w+,\s*)?(is|are|was|were|do|does|did|has|have|had|will|would|can|could|"
                         r"should|shall|may|might|must|isn't|aren't|didn't|doesn't|hasn't|won't)\b", re.I)),
)


def question_kind(question: str) -> QuestionKind:
    """Open (catch-up) first, then the first wh- word, then a yes/no opening, else "what"."""
    if is_catch_up(question):
        return "open"
    for kind, pattern in _KIND_WORDS:
        if pattern.search(question):
            return kind
    return "what"


class Reranker(Protocol):
    name: str

    def score(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """A relevance logit per text (higher: answers the question better)."""
        ...


@dataclass(frozen=True, slots=True)
class RelevanceConfig:
    """Picked on the development scenarios (benchmarks/tools/tune_relevance.py)."""

    #: a fact whose recall score is below this does not answer anything.
    min_recall: float = 0.4
    #: open questions: keep facts whose recall score is at least this share of the best one
    #: and at least ``open_min_recall`` ("What is Lin up to?" is near no fact in particular).
    open_relative_cut: float = 0.9
    open_min_recall: float = 0.2
    #: the most facts one reply tells (the rules composer says them all).
    max_facts: int = 4
    #: weight and temperature of the cross-encoder's logit in a fact's relevance.
    rerank_weight: float = 0.25
    rerank_temperature: float = 2.0
    #: the cross-encoder reads at most this many facts (the best by recall).
    rerank_limit: int = 8
    #: other events answer too only when within this margin of the best event's relevance.
    event_margin: float = 0.3
    #: nothing below this relevance is said.
    floor: float = 0.6

    def __post_init__(self) -> None:
        if not 0 <= self.open_relative_cut <= 1:
            raise ValueError("RelevanceConfig.open_relative_cut must be in [0, 1]")
        if self.max_facts < 1 or self.rerank_limit < 0:
            raise ValueError("RelevanceConfig.max_facts must be >= 1 and rerank_limit >= 0")
        if self.rerank_temperature <= 0 or self.event_margin < 0:
            raise ValueError("RelevanceConfig.rerank_temperature must be > 0 and event_margin >= 0")


@dataclass(frozen=True, slots=True)
class Choice:
    """What the relevance step chose: fact ids best first, the scores of the facts it weighed."""

    kind: QuestionKind
    chosen: tuple[str, ...]
    scores: dict[str, float] = field(default_factory=dict)
    reranked: int = 0
    ms: float = 0.0

    def audit(self) -> dict[str, object]:
        return {"kind": self.kind, "chosen": list(self.chosen), "reranked": self.reranked, "ms": round(self.ms, 1)}


class Relevance:
    def __init__(self, config: RelevanceConfig | None = None, reranker: Reranker | None = None) -> None:
        self.config = config or RelevanceConfig()
        self.reranker = reranker if self.config.rerank_weight > 0 else None

    def choose(self, question: str, events: Sequence[RecalledEvent], projection: Projection) -> Choice:
        """``events`` as recalled (covers are weighed by their truth too: a cover is the owner's
        chosen answer to questions about the secret it stands for); ``projection`` the storyline."""
        started = time.perf_counter()
        kind = question_kind(question)
        recalled = {r.fact.id: r for ev in events for r in ev.facts}
        own = {d.fact.id: _inherited(d, recalled, lambda r: r.score) for d in projection.used}
        least = self.config.open_min_recall if kind == "open" else self.config.min_recall
        storyline = [d for d in projection.used if own[d.fact.id] >= least]
        if not storyline:
            return Choice(kind, ())
        scores: dict[str, float] = {}
        reranked = 0
        if kind == "open":
            top = max(own[d.fact.id] for d in storyline)
            kept = sorted((d for d in storyline if own[d.fact.id] >= self.config.open_relative_cut * top),
                          key=lambda d: -own[d.fact.id])
            chosen = _one_per_event_first(kept)
            scores = {d.fact.id: own[d.fact.id] for d in kept}
        else:
            scores, reranked = self._scores(question, storyline, own, recalled)
            chosen = self._best_events(storyline, scores)
        return Choice(kind, tuple(chosen[: self.config.max_facts]), scores, reranked,
                      (time.perf_counter() - started) * 1000)

    def _scores(self, question: str, storyline: list[FactDecision], own: dict[str, float],
                recalled: dict[str, Recalled]) -> tuple[dict[str, float], int]:
        scores = {d.fact.id: own[d.fact.id] for d in storyline}
        if self.reranker is None or self.config.rerank_limit == 0:
            return scores, 0
        read = sorted(storyline, key=lambda d: -own[d.fact.id])[: self.config.rerank_limit]
        texts = {d.fact.id: d.fact.text for d in read}
        for d in read:  # a cover is read with its truth, as for recall
            truth = recalled.get(d.fact.covers or "")
            if d.fact.version == "cover" and truth is not None:
                texts[truth.fact.id] = truth.fact.text
        ids = list(texts)
        logit = dict(zip(ids, (float(x) for x in self.reranker.score(question, [texts[i] for i in ids]))))
        w, t = self.config.rerank_weight, self.config.rerank_temperature
        for d in read:
            best = max(logit[d.fact.id], logit.get(d.fact.covers or "", -math.inf) if d.fact.version == "cover"
                       else -math.inf)
            scores[d.fact.id] = own[d.fact.id] + w / (1.0 + math.exp(-best / t))
        return scores, len(ids)

    def _best_events(self, storyline: list[FactDecision], scores: dict[str, float]) -> list[str]:
        best: dict[str, float] = {}
        for d in storyline:
            best[d.fact.event_id] = max(best.get(d.fact.event_id, -math.inf), scores[d.fact.id])
        top = max(best.values())
        keep = {e for e, s in best.items() if s >= self.config.floor and s >= top - self.config.event_margin}
        kept = sorted((d for d in storyline if d.fact.event_id in keep), key=lambda d: -scores[d.fact.id])
        return [d.fact.id for d in kept]


def _inherited(d: FactDecision, recalled: dict[str, Recalled], value: Callable[[Recalled], float]) -> float:
    """A fact's recall score; a cover's is the better of its own and its truth's."""
    own = recalled[d.fact.id].score if d.fact.id in recalled else d.score
    truth = recalled.get(d.fact.covers or "") if d.fact.version == "cover" else None
    return max(own, value(truth)) if truth is not None else own


def _one_per_event_first(ranked: list[FactDecision]) -> list[str]:
    """Best fact of each event first, then the rest: a capped reply covers more events."""
    seen: set[str] = set()
    first: list[str] = []
    rest: list[str] = []
    for d in ranked:
        (rest if d.fact.event_id in seen else first).append(d.fact.id)
        seen.add(d.fact.event_id)
    return first + rest
