"""Which of the facts that may be said answer the question (and which are merely near it).

Recall finds facts *near* a question; a reply should tell the ones that *answer* it. This step
runs after adjudication, over the storyline alone (the facts the audience may know), so nothing
it decides can depend on a fact the asker may not know: a deflection reads the same whether a
secret exists or not (see epmem/reply/projection.py).

How it chooses, by the kind of question:

- an **open** question ("What is Lin up to?", "Catch me up") and a question about how someone
  is ("How's Tyler's job going?", "Is Aoife okay?": a *state* question): every event the
  storyline has, best first, down to a share of the best fact's recall score. A cross-encoder
  cannot judge these (no single fact "answers" how someone is), so it only vetoes: a fact it
  is sure does not belong (logit below ``open_veto``) is left out unless its recall score is
  strong (``open_veto_recall``);
- any other question (yes/no, when, where, who, what, how much): each fact gets
  ``relevance = recall score + rerank_weight * sigmoid(cross-encoder logit / rerank_temperature)``;
  a fact the cross-encoder says does not answer the question (logit below ``veto``) is left
  out; the best event answers, other events only when their best fact is within
  ``event_margin`` of it; and nothing is said below ``floor`` unless the cross-encoder says it
  answers (logit at least ``answers``); when nothing is left, the asker gets the deflection.

Failing closed: whatever is left out because it is not sure to answer is named in the audit
(``Choice.left_out``, with the reason), so the owner can see what was not said and why.

The cross-encoder (epmem/embedding/cross_encoder.py) reads question and fact together; it reads
at most ``rerank_limit`` facts (the best by recall), so its cost is bounded per reply. Without
it (``rerank_weight = 0`` or no model), relevance is the recall score alone and nothing is
vetoed. The parameters were picked on development scenarios only
(benchmarks/tools/tune_relevance.py); the held-out sets are reported, never tuned on.
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

QuestionKind = Literal["open", "state", "yesno", "when", "where", "who", "what"]

#: how someone or something is: "How's Tyler's job going?", "Is Aoife okay?" (not "how much").
_STATE = re.compile(r"\bhow(?:'s|\u2019s| is| are| was| were| has| have| did| do|'re)\b"
                    r"(?!\s+(?:much|many|long|old|far|often|soon|big)\b)"
                    r"|\b(?:ok|okay|alright|all right|holding up|getting on)\b", re.I)

_KIND_WORDS: tuple[tuple[QuestionKind, re.Pattern[str]], ...] = (
    ("when", re.compile(r"\b(when|what time|what date|which day|how long|how soon|until when)\b", re.I)),
    ("where", re.compile(r"\b(where|which (?:city|country|place|town))\b", re.I)),
    ("who", re.compile(r"\b(who|whom|whose|with whom)\b", re.I)),
    ("yesno", re.compile(r"^\s*(?:\w+,\s*)?(is|are|was|were|do|does|did|has|have|had|will|would|can|could|"
                         r"should|shall|may|might|must|isn't|aren't|didn't|doesn't|hasn't|won't)\b", re.I)),
)


def question_kind(question: str) -> QuestionKind:
    """Open (catch-up) first, then how someone is, then the first wh- word, then a yes/no
    opening, else "what"."""
    if is_catch_up(question):
        return "open"
    if _STATE.search(question):
        return "state"
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
    open_relative_cut: float = 0.8
    open_min_recall: float = 0.2
    #: state questions ("How's Tyler's job going?"), chosen like open ones with their own cut.
    state_relative_cut: float = 0.8
    state_min_recall: float = 0.4
    #: open and state questions: a fact with a cross-encoder logit below ``open_veto`` is left
    #: out unless its recall score is at least ``open_veto_recall``.
    open_veto: float = -10.5
    open_veto_recall: float = 0.6
    #: the most facts one reply tells (the rules composer says them all).
    max_facts: int = 4
    #: weight and temperature of the cross-encoder's logit in a fact's relevance.
    rerank_weight: float = 0.25
    rerank_temperature: float = 2.0
    #: other questions: a fact with a cross-encoder logit below this does not answer them.
    veto: float = -5.0
    #: the cross-encoder reads at most this many facts (the best by recall).
    rerank_limit: int = 8
    #: other events answer too only when within this margin of the best event's relevance.
    event_margin: float = 0.3
    #: nothing below this relevance is said, unless the cross-encoder says the fact answers
    #: the question (logit at least ``answers``).
    floor: float = 0.6
    answers: float = 0.0

    def __post_init__(self) -> None:
        if not (0 <= self.open_relative_cut <= 1 and 0 <= self.state_relative_cut <= 1):
            raise ValueError("RelevanceConfig.open_relative_cut and state_relative_cut must be in [0, 1]")
        if self.max_facts < 1 or self.rerank_limit < 0:
            raise ValueError("RelevanceConfig.max_facts must be >= 1 and rerank_limit >= 0")
        if self.rerank_temperature <= 0 or self.event_margin < 0:
            raise ValueError("RelevanceConfig.rerank_temperature must be > 0 and event_margin >= 0")


@dataclass(frozen=True, slots=True)
class Choice:
    """What the relevance step chose: fact ids best first, the scores of the facts it weighed,
    and what it left out because it was not sure the fact answers (fact id -> why)."""

    kind: QuestionKind
    chosen: tuple[str, ...]
    scores: dict[str, float] = field(default_factory=dict)
    reranked: int = 0
    ms: float = 0.0
    left_out: dict[str, str] = field(default_factory=dict)

    def audit(self) -> dict[str, object]:
        return {"kind": self.kind, "chosen": list(self.chosen), "reranked": self.reranked, "ms": round(self.ms, 1),
                "left_out": [{"fact": f, "why": why} for f, why in self.left_out.items()]}


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
        c = self.config
        least = {"open": c.open_min_recall, "state": c.state_min_recall}.get(kind, c.min_recall)
        storyline = [d for d in projection.used if own[d.fact.id] >= least]
        if not storyline:
            return Choice(kind, ())
        left_out: dict[str, str] = {}
        if kind in ("open", "state"):
            ranked = sorted(storyline, key=lambda d: -own[d.fact.id])
            logit, reranked = self._logits(question, [d for d in ranked if own[d.fact.id] < c.open_veto_recall],
                                           recalled)
            left_out = {f: f"cross-encoder {x:.1f} < {c.open_veto}: not about the question"
                        for f, x in logit.items() if x < c.open_veto}
            ranked = [d for d in ranked if d.fact.id not in left_out]
            cut = (c.open_relative_cut if kind == "open" else c.state_relative_cut) * own[ranked[0].fact.id] \
                if ranked else 0.0
            kept = [d for d in ranked if own[d.fact.id] >= cut]
            chosen = _one_per_event_first(kept)
            scores = {d.fact.id: own[d.fact.id] for d in kept}
        else:
            logit, reranked = self._logits(question, sorted(storyline, key=lambda d: -own[d.fact.id]), recalled)
            left_out = {f: f"cross-encoder {x:.1f} < {c.veto}: does not answer it"
                        for f, x in logit.items() if x < c.veto}
            weighed = [d for d in storyline if d.fact.id not in left_out]
            scores = {d.fact.id: own[d.fact.id] + (c.rerank_weight / (1.0 + math.exp(-logit[d.fact.id]
                                                                                    / c.rerank_temperature))
                                                   if d.fact.id in logit else 0.0) for d in weighed}
            sure = {f for f, x in logit.items() if x >= c.answers}
            chosen = self._best_events(weighed, scores, sure, left_out)
        return Choice(kind, tuple(chosen[: c.max_facts]), scores, reranked,
                      (time.perf_counter() - started) * 1000, left_out)

    def _logits(self, question: str, facts: list[FactDecision], recalled: dict[str, Recalled]
                ) -> tuple[dict[str, float], int]:
        """The cross-encoder's logit for the best ``rerank_limit`` of ``facts`` (a cover's is the
        better of its own and its truth's: it is read with its truth, as for recall)."""
        if self.reranker is None or self.config.rerank_limit == 0 or not facts:
            return {}, 0
        read = facts[: self.config.rerank_limit]
        texts = {d.fact.id: d.fact.text for d in read}
        for d in read:
            truth = recalled.get(d.fact.covers or "")
            if d.fact.version == "cover" and truth is not None:
                texts[truth.fact.id] = truth.fact.text
        ids = list(texts)
        raw = dict(zip(ids, (float(x) for x in self.reranker.score(question, [texts[i] for i in ids]))))
        logit = {d.fact.id: max(raw[d.fact.id], raw.get(d.fact.covers or "", -math.inf)
                                if d.fact.version == "cover" else -math.inf) for d in read}
        return logit, len(ids)

    def _best_events(self, weighed: list[FactDecision], scores: dict[str, float], sure: set[str],
                     left_out: dict[str, str]) -> list[str]:
        """The best event, and others within ``event_margin`` of it; an event answers only if a
        fact of it reaches the floor or the cross-encoder is sure it answers (``sure``)."""
        best: dict[str, float] = {}
        for d in weighed:
            if scores[d.fact.id] >= self.config.floor or d.fact.id in sure:
                best[d.fact.event_id] = max(best.get(d.fact.event_id, -math.inf), scores[d.fact.id])
        if not best:  # nothing is good enough: fail closed, and say so
            left_out.update({d.fact.id: f"relevance {scores[d.fact.id]:.2f} < floor {self.config.floor}"
                             for d in weighed})
            return []
        top = max(best.values())
        keep = {e for e, s in best.items() if s >= top - self.config.event_margin}
        kept = sorted((d for d in weighed if d.fact.event_id in keep), key=lambda d: -scores[d.fact.id])
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
