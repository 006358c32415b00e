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
  is sure does not belong (logit below ``open_veto``, ``state_veto``) is left out unless its
  recall score is strong (``open_veto_recall``); the other facts of an event told are told
  too (``complete_events``: "how is she?" is answered by the whole of what happened);
- any other question (yes/no, when, where, who, what, how much): each fact gets
  ``relevance = recall score + rerank_weight * sigmoid(cross-encoder logit / rerank_temperature)``;
  a fact the cross-encoder says does not answer the question (logit below ``veto``) is left
  out; the best event answers, other events only when their best fact is within
  ``event_margin`` of it; and nothing is said below ``floor`` unless the cross-encoder says it
  answers (logit at least ``answers``); when nothing is left, the asker gets the deflection.

Every kind: a fact recall found only weakly (below the kind's least recall score, at least
``rescue_recall``) is said only when the cross-encoder is sure it answers (``rescue_logit``):
"Why is Elif off on 22-23 May?" is far from "Elif's egg retrieval is on 22 May" for the
embedder, not for the cross-encoder. The cross-encoder reads the question with the owner named
where the asker says "you" (:func:`addressed_to`): the memory speaks of the owner by name, and
the model judges "Are you getting a pet?" against "Alex is picking up a cat" as unrelated.

Open and state questions also hear a third model (``match_weight``): a late-interaction
MaxSim (epmem/embedding/late_interaction.py, ColBERT token vectors) is added to the recall score
of the best ``match_limit`` facts, centred so that a typical fact keeps its score. "How's your
health, Chucho?" is near "Chucho's son got into engineering" for the pooled embedder; token by
token, nothing of the son's admission covers "health", and the fact falls below the cut.

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
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from epmem.language import is_chinese
from epmem.memory.recall import Recalled, RecalledEvent, is_catch_up
from epmem.reply.chinese import SharedWords, chinese_kind, name_forms
from epmem.reply.projection import FactDecision, Projection
from epmem.reply.rumour import claim_words, is_rumour, speaks_to

QuestionKind = Literal["open", "state", "yesno", "when", "where", "who", "what"]

#: how someone or something is: "How's Tyler's job going?", "Is Aoife okay?" (not "how much").
_STATE = re.compile(
    r"\bhow(?:'s|\u2019s| is| are| was| were| has| have| did| do|'re)\b"
    r"(?!\s+(?:much|many|long|old|far|often|soon|big)\b)"
    r"|\b(?:ok|okay|alright|all right|holding up|getting on)\b",
    re.I,
)

#: a question that opens with a verb asks yes or no ("Is she ...?", "Madam, will you ...?").
_YES_NO = re.compile(
    r"^\s*(?:\w+,\s*)?(is|are|was|were|do|does|did|has|have|had|will|would|can|could|"
    r"should|shall|may|might|must|isn't|aren't|didn't|doesn't|hasn't|won't)\b",
    re.I,
)

_KIND_WORDS: tuple[tuple[QuestionKind, re.Pattern[str]], ...] = (
    ("when", re.compile(r"\b(when|what time|what date|which day|how long|how soon|until when)\b", re.I)),
    ("where", re.compile(r"\b(where|which (?:city|country|place|town))\b", re.I)),
    ("who", re.compile(r"\b(who|whom|whose|with whom)\b", re.I)),
    ("yesno", _YES_NO),
)


def asks_yes_or_no(sentence: str) -> bool:
    """Whether ``sentence`` opens like a yes/no question."""
    return _YES_NO.search(sentence) is not None


#: the asker speaks to the owner ("Are you cutting down your hours?"); the memory speaks of
#: the owner by name ("Leila is going down to 4 days a week"). Longest forms first.
_SECOND_PERSON: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), replacement)
    for pattern, replacement in (
        (r"\byou(?:'re|’re)\b", "{name} is"),
        (r"\byou(?:'ve|’ve)\b", "{name} has"),
        (r"\byou(?:'ll|’ll)\b", "{name} will"),
        (r"\byou(?:'d|’d)\b", "{name} would"),
        (r"\byour(?:self|selves)\b", "{name}"),
        (r"\byours?\b", "{name}'s"),
        (r"\byou(?:\s+(?:two|both|guys|all))?\b", "{name}"),
    )
)


def addressed_to(question: str, name: str) -> str:
    """``question`` with the owner, addressed as "you", named instead: what the cross-encoder
    reads, since it judges "Are you getting a pet?" against "Alex is picking up a cat" as
    unrelated (-7.5) and "Are Alex getting a pet?" as an answer (+1.8)."""
    if not name:
        return question
    for pattern, replacement in _SECOND_PERSON:
        question = pattern.sub(replacement.format(name=name), question)
    return question


_SENTENCE_END = re.compile(r"(?<=[.?!\u3002\uff1f\uff01])\s*")
_CLAUSE = re.compile(
    r",?\s+(?:and|or|but|plus)\s+(?=(?:what|when|where|who|whom|whose|which|how|why|whether|if|is|"
    r"are|was|were|do|does|did|has|have|had|will|would|can|could|should|any)\b)",
    re.I,
)


def question_parts(question: str, limit: int = 6) -> list[str]:
    """The whole question, then its sentences and the clauses that ask something of their own,
    at most ``limit`` in all: the cross-encoder judges one need at a time, and scores a fact
    that answers the second half of "Did they sign for the flat, and what is the new pay like?"
    as unrelated to the whole."""
    parts = [question.strip()]
    for sentence in _SENTENCE_END.split(question.strip()):
        clauses = [p.strip() for p in _CLAUSE.split(sentence) if p.strip()]
        parts.extend(clauses if len(clauses) > 1 else [sentence.strip()])
    return list(dict.fromkeys(p for p in parts if p))[: max(1, limit)]


def owner_called(owner: str, texts: Sequence[str]) -> str:
    """How the facts name the owner: whichever of the full name and its words they use most
    ("Leila" for Dr. Leila Haddad, "Ha" for Nguyễn Thu Hà, "Chen Jing" as written); else the
    first word."""
    folded = [_fold(t) for t in texts]
    best, count = "", 0
    for form in dict.fromkeys([owner, *owner.split()]):
        key = _fold(form.strip("."))
        if len(key) < 2:
            continue
        n = sum(len(re.findall(rf"\b{re.escape(key)}\b", t)) for t in folded)
        if n > count:
            best, count = form.strip("."), n
    return best or (owner.split() or [""])[0]


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


def question_kind(question: str) -> QuestionKind:
    """Open (catch-up) first, then how someone is, then the first wh- word, then a yes/no
    opening, else "what". A question in Chinese: epmem/reply/chinese.py."""
    if is_chinese(question):
        return chinese_kind(question)
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

    def score(self, question: str, texts: Sequence[str], events: Sequence[str] | None = None) -> np.ndarray:
        """A relevance logit per text (higher: answers the question better). ``events``: the
        event of each text (a cover and its truth are one event told two ways), for a model that
        weighs a word by how many texts hold it."""
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
    #: the same for state questions.
    state_veto: float = -10.5
    #: open and state questions: the other facts of an event told are told too (when the
    #: storyline has them and they are not vetoed).
    complete_events: bool = True
    #: a fact whose recall score is below the question kind's least but at least this is said
    #: only when the cross-encoder is sure it answers (logit at least ``rescue_logit``): "Why is
    #: Elif off on 22-23 May?" is far from "Elif's egg retrieval is on 22 May" for the embedder.
    #: Recall's min_relevance must be at most this (epmem/memory/recall.py).
    rescue_recall: float = 0.2
    rescue_logit: float = 2.0
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
    #: other questions: once the cross-encoder is fairly sure some chosen event answers (its best
    #: logit at least ``margin_from``), an event whose best logit is more than ``logit_margin``
    #: below that one is left out ("Is Marcus working on Fridays?" is answered by his phased
    #: return, not by his knee operation, which recall finds as near). Picked with one scenario
    #: set left out in turn (benchmarks/tools/loso_relevance.py).
    logit_margin: float = 2.0
    margin_from: float = -1.0
    #: a question is read by the cross-encoder part by part (its sentences, and clauses joined
    #: by "and"/"or" that ask something of their own), at most this many parts, and a fact
    #: scores its best part: "Did she sign for the flat, and what is the new pay like?" asks two
    #: things, and "Hi, this is Jess's phone. What time is his appointment?" one, after a greeting.
    max_parts: int = 6
    #: when the cross-encoder (or its stand-in) leaves out every fact read, the event recall
    #: scores best still answers if its recall score is at least this far above every other
    #: event's: the question's words said nothing, and the embedder alone points at one event
    #: ("儿子是不是想退学啊?" shares no word with "子涵读博一切顺利，打算按时毕业", which recall puts
    #: 0.2 above anything else). One event only never stands out (nothing to stand out from).
    #: Off (inf) for English, where the cross-encoder reads the words; picked for Chinese with
    #: one Chinese set left out in turn (benchmarks/tools/loso_relevance.py --chinese).
    stand_out: float = math.inf

    #: open and state questions: weight of the late-interaction model's MaxSim
    #: (epmem/embedding/late_interaction.py) in a fact's recall score,
    #: ``score + match_weight * (maxsim - match_center)`` (the centre is about the model's median
    #: MaxSim for a fact recall finds); 0 turns it off. It weighs in where the cross-encoder
    #: cannot ("How's your health?" is answered by no single fact), and only there: on other
    #: questions the cross-encoder already reads question and fact together.
    match_weight: float = 1.0
    match_center: float = 0.75
    #: the late-interaction model reads at most this many facts (the best by recall).
    match_limit: int = 16
    match_kinds: tuple[QuestionKind, ...] = ("open", "state")

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
    #: the cross-encoder's (or its stand-in's) logit of each fact it read.
    logits: dict[str, float] = field(default_factory=dict)
    #: with a model configured (epmem/reply/model_choice.py): who chose (``model`` or ``rules``),
    #: why the model's choice was not used, what it was offered, the rules step's own choice and
    #: the call. None without a model: the record is then as it always was.
    chooser: dict[str, object] | None = None

    def audit(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "chosen": list(self.chosen),
            "reranked": self.reranked,
            "ms": round(self.ms, 1),
            "left_out": [{"fact": f, "why": why} for f, why in self.left_out.items()],
        }
        return out if self.chooser is None else {**out, **self.chooser}


#: a question in Chinese (epmem/reply/chinese.py): the English models are not asked; the words
#: a fact shares with the question stand in for the cross-encoder, for every kind of question
#: (whatever recall scored), over all the facts recall found.
CHINESE = RelevanceConfig(
    open_veto=-math.inf,
    state_veto=-5.0,
    open_veto_recall=math.inf,
    rerank_limit=48,
    rerank_weight=1.0,
    event_margin=0.5,
    match_weight=0.0,
    logit_margin=1.0,
    max_parts=1,
    stand_out=0.15,
)


class Relevance:
    def __init__(
        self,
        config: RelevanceConfig | None = None,
        reranker: Reranker | None = None,
        matcher: Reranker | None = None,
        chinese: RelevanceConfig | None = CHINESE,
    ) -> None:
        self.config = config or RelevanceConfig()
        self.reranker = reranker if self.config.rerank_weight > 0 else None
        self.matcher = matcher if self.config.match_weight > 0 else None
        self.chinese = chinese

    def config_for(self, question: str) -> RelevanceConfig:
        """The parameters a question is read with (Chinese questions have their own)."""
        return self.chinese if self.chinese is not None and is_chinese(question) else self.config

    def choose(self, question: str, events: Sequence[RecalledEvent], projection: Projection, owner: str = "") -> Choice:
        """``events`` as recalled (covers are weighed by their truth too: a cover is the owner's
        chosen answer to questions about the secret it stands for); ``projection`` the storyline;
        ``owner`` the owner's name (the cross-encoder reads "you" as the owner, named)."""
        if self.chinese is not None and is_chinese(question):
            words = SharedWords(ignore=name_forms(owner))
            return Relevance(self.chinese, words, chinese=None).choose(question, events, projection, owner)
        started = time.perf_counter()
        kind = question_kind(question)
        asked = addressed_to(question, owner_called(owner, [d.fact.text for d in projection.used]))
        recalled = {r.fact.id: r for ev in events for r in ev.facts}
        pairs = counterparts(recalled)
        own = {d.fact.id: _inherited(d, recalled, pairs) for d in projection.used}
        parts = question_parts(asked, self.config.max_parts)
        c = self.config
        embedded = dict(own)  # the embedder's alone: a strong one overrides the open veto
        sims: dict[str, float] = {}
        if kind in c.match_kinds:
            sims = self._maxsims(asked, projection.used, own, recalled)
            own.update({f: own[f] + c.match_weight * (m - c.match_center) for f, m in sims.items()})
        least = {"open": c.open_min_recall, "state": c.state_min_recall}.get(kind, c.min_recall)
        pool = sorted(
            (d for d in projection.used if own[d.fact.id] >= min(least, c.rescue_recall)), key=lambda d: -own[d.fact.id]
        )
        if not pool:
            return Choice(kind, ())
        left_out: dict[str, str] = {}
        if kind in ("open", "state"):
            logit, reranked, _ = self._logits(
                parts, [d for d in pool if embedded[d.fact.id] < c.open_veto_recall], recalled
            )
            veto = c.open_veto if kind == "open" else c.state_veto
            left_out = {
                f: f"cross-encoder {x:.1f} < {veto}: not about the question"
                for f, x in logit.items()
                if x < veto and embedded[f] < c.open_veto_recall
            }
        else:
            logit, reranked, by_part = self._logits(parts, pool, recalled)
            left_out = {
                f: f"cross-encoder {x:.1f} < {c.veto}: does not answer it" for f, x in logit.items() if x < c.veto
            }
        self._stands_out(pool, own, logit, left_out)
        rescued = {
            d.fact.id for d in pool if own[d.fact.id] < least and logit.get(d.fact.id, -math.inf) >= c.rescue_logit
        }
        left_out.update(
            {
                d.fact.id: f"recall {own[d.fact.id]:.2f} < {least} and the cross-encoder is not sure it answers"
                for d in pool
                if own[d.fact.id] < least
                and d.fact.id not in rescued
                and d.fact.id not in left_out
                and d.fact.id in logit
            }
        )
        ranked = [d for d in pool if d.fact.id not in left_out and (own[d.fact.id] >= least or d.fact.id in rescued)]
        if kind in ("open", "state"):
            top = max((own[d.fact.id] for d in ranked if d.fact.id not in rescued), default=0.0)
            cut = (c.open_relative_cut if kind == "open" else c.state_relative_cut) * top
            kept = [d for d in ranked if own[d.fact.id] >= cut or d.fact.id in rescued]
            if c.complete_events:
                told = {d.fact.event_id for d in kept}
                kept = [d for d in ranked if d.fact.event_id in told]
            chosen = _one_per_event_first(kept)
            scores = {d.fact.id: own[d.fact.id] for d in kept}
            left_out.update(
                {
                    f: f"score {own[f]:.2f} below the cut (recall {embedded[f]:.2f}, MaxSim {m:.2f})"
                    for f, m in sims.items()
                    if f not in scores and f not in left_out
                }
            )
        else:
            scores = {
                d.fact.id: own[d.fact.id]
                + (
                    c.rerank_weight / (1.0 + math.exp(-logit[d.fact.id] / c.rerank_temperature))
                    if d.fact.id in logit
                    else 0.0
                )
                for d in ranked
            }
            sure = {f for f, x in logit.items() if x >= c.answers}
            chosen = self._best_events(ranked, scores, sure, left_out)
        if kind not in ("open", "state"):  # there the cross-encoder only vetoes (see above)
            chosen = self._within_logit_margin(
                chosen, {d.fact.id: d.fact.event_id for d in pool}, logit, by_part, left_out
            )
            if is_rumour(question, asks_yes_or_no):
                chosen = _on_the_claim(question, chosen, {d.fact.id: d for d in pool}, recalled, pairs, left_out)
        return Choice(
            kind,
            tuple(chosen[: c.max_facts]),
            scores,
            reranked,
            (time.perf_counter() - started) * 1000,
            left_out,
            logit,
        )

    def _stands_out(
        self, pool: list[FactDecision], own: dict[str, float], logit: dict[str, float], left_out: dict[str, str]
    ) -> None:
        """When every fact read was left out as not about the question, put back the event that
        recall scores at least ``stand_out`` above every other event (see RelevanceConfig)."""
        if not logit or any(f not in left_out for f in logit):
            return
        best: dict[str, float] = {}
        for d in pool:
            best[d.fact.event_id] = max(best.get(d.fact.event_id, -math.inf), own[d.fact.id])
        if len(best) < 2:
            return
        top, second = sorted(best.values(), reverse=True)[:2]
        if top - second < self.config.stand_out:
            return
        for d in pool:
            if best[d.fact.event_id] == top:
                left_out.pop(d.fact.id, None)

    def _within_logit_margin(
        self,
        chosen: list[str],
        event_of: dict[str, str],
        logit: dict[str, float],
        by_part: dict[str, tuple[float, ...]],
        left_out: dict[str, str],
    ) -> list[str]:
        """Leave out the chosen events the cross-encoder rates far below the best chosen one,
        once it is fairly sure of that one (``logit_margin``, ``margin_from``); unless the event
        is, within the same margin, the best answer to a part of the question of its own: "Is
        Marcus working on Fridays this term, and what is he preparing for September?" has two
        best answers, and the second must not be measured against the first."""
        best = best_by_event(chosen, event_of, logit)
        if not best or max(best.values()) < self.config.margin_from:
            return chosen
        cut = max(best.values()) - self.config.logit_margin
        keep = {e for e, x in best.items() if x >= cut} | self._best_per_part(chosen, event_of, by_part)
        out = [f for f in chosen if event_of[f] not in best or event_of[f] in keep]
        left_out.update(
            {
                f: f"cross-encoder {best[event_of[f]]:.1f}: more than {self.config.logit_margin} below the best event's"
                for f in chosen
                if f not in out
            }
        )
        return out

    def _best_per_part(
        self, chosen: list[str], event_of: dict[str, str], by_part: dict[str, tuple[float, ...]]
    ) -> set[str]:
        """The events within ``logit_margin`` of the best answer to some part of the question
        that the cross-encoder is fairly sure of (at least ``margin_from``)."""
        keep: set[str] = set()
        for p in range(min((len(v) for v in by_part.values()), default=0)):
            best = best_by_event(chosen, event_of, {f: v[p] for f, v in by_part.items()})
            top = max(best.values(), default=-math.inf)
            if top >= self.config.margin_from:
                keep |= {e for e, x in best.items() if x >= top - self.config.logit_margin}
        return keep

    def _maxsims(
        self, question: str, used: Sequence[FactDecision], own: dict[str, float], recalled: dict[str, Recalled]
    ) -> dict[str, float]:
        """The late-interaction model's MaxSim for the best ``match_limit`` facts that recall
        found (a cover's is the better of its own and its truth's, as for recall)."""
        c = self.config
        if self.matcher is None or c.match_limit == 0:
            return {}
        # privacy: only facts the asker may know (and a cover's truth, as for recall) are read
        read = sorted((d for d in used if own[d.fact.id] >= c.rescue_recall), key=lambda d: -own[d.fact.id])
        read = read[: c.match_limit]
        if not read:
            return {}
        return _read_with_truth(self.matcher, [question], read, recalled)[0]

    def _logits(
        self, questions: Sequence[str], facts: list[FactDecision], recalled: dict[str, Recalled]
    ) -> tuple[dict[str, float], int, dict[str, tuple[float, ...]]]:
        """The cross-encoder's logit for the best ``rerank_limit`` of ``facts`` (a cover's is the
        better of its own and its truth's: it is read with its truth, as for recall), and per
        part of the question."""
        if self.reranker is None or self.config.rerank_limit == 0 or not facts:
            return {}, 0, {}
        return _read_with_truth(self.reranker, questions, facts[: self.config.rerank_limit], recalled)

    def _best_events(
        self, weighed: list[FactDecision], scores: dict[str, float], sure: set[str], left_out: dict[str, str]
    ) -> list[str]:
        """The best event, and others within ``event_margin`` of it; an event answers only if a
        fact of it reaches the floor or the cross-encoder is sure it answers (``sure``)."""
        best: dict[str, float] = {}
        for d in weighed:
            if scores[d.fact.id] >= self.config.floor or d.fact.id in sure:
                best[d.fact.event_id] = max(best.get(d.fact.event_id, -math.inf), scores[d.fact.id])
        if not best:  # nothing is good enough: fail closed, and say so
            left_out.update(
                {d.fact.id: f"relevance {scores[d.fact.id]:.2f} < floor {self.config.floor}" for d in weighed}
            )
            return []
        top = max(best.values())
        keep = {e for e, s in best.items() if s >= top - self.config.event_margin}
        kept = sorted((d for d in weighed if d.fact.event_id in keep), key=lambda d: -scores[d.fact.id])
        return [d.fact.id for d in kept]


def best_by_event(chosen: Sequence[str], event_of: dict[str, str], logit: dict[str, float]) -> dict[str, float]:
    """The best logit of each event among the ``chosen`` facts that have one."""
    best: dict[str, float] = {}
    for f in chosen:
        if f in logit:
            best[event_of[f]] = max(best.get(event_of[f], -math.inf), logit[f])
    return best


def _on_the_claim(
    question: str,
    chosen: list[str],
    weighed: dict[str, FactDecision],
    recalled: dict[str, Recalled],
    pairs: dict[str, tuple[str, ...]],
    left_out: dict[str, str],
) -> list[str]:
    """A rumour ("Is it true ...?") is answered only by the events that speak to its claim
    (epmem/reply/rumour.py): a fact of the event, or its cover or truth, shares a word of it."""
    claim = claim_words(question)
    texts: dict[str, list[str]] = {}
    for f in chosen:
        d = weighed[f]
        texts.setdefault(d.fact.event_id, []).extend(
            [d.fact.text, *(recalled[o].fact.text for o in pairs.get(f, ()) if o in recalled)]
        )
    on = {e for e, t in texts.items() if speaks_to(claim, t)}
    left_out.update({f: "a rumour: shares no word of its claim" for f in chosen if weighed[f].fact.event_id not in on})
    return [f for f in chosen if weighed[f].fact.event_id in on]


def counterparts(recalled: dict[str, Recalled]) -> dict[str, tuple[str, ...]]:
    """A cover and the truth it stands for are one event told two ways: each answers whatever
    the other answers (the cover for those who may not know the truth; the truth, once the owner
    allows it, for the question its cover used to answer)."""
    pairs: dict[str, list[str]] = {}
    for r in recalled.values():
        if r.fact.version == "cover" and r.fact.covers and r.fact.covers in recalled:
            pairs.setdefault(r.fact.id, []).append(r.fact.covers)
            pairs.setdefault(r.fact.covers, []).append(r.fact.id)
    return {k: tuple(v) for k, v in pairs.items()}


def _read_with_truth(
    model: Reranker, questions: Sequence[str], read: Sequence[FactDecision], recalled: dict[str, Recalled]
) -> tuple[dict[str, float], int, dict[str, tuple[float, ...]]]:
    """``model``'s score of each fact in ``read``, how many texts it read, and the score per
    question part: the best over the question's parts, and over the fact and its counterpart (a
    cover read with its truth, a truth with its cover; recall treats them the same way)."""
    pairs = counterparts(recalled)
    texts = {d.fact.id: d.fact.text for d in read}
    # a fact and its counterpart are one event told two ways (counted once where words are counted)
    event_of = {d.fact.id: d.fact.event_id for d in read}
    for d in read:
        for other in pairs.get(d.fact.id, ()):
            texts[other] = recalled[other].fact.text
            event_of.setdefault(other, d.fact.event_id)
    ids = list(texts)
    per: dict[str, list[float]] = {i: [] for i in ids}
    for question in questions:
        for i, x in zip(ids, model.score(question, [texts[i] for i in ids], events=[event_of[i] for i in ids])):
            per[i].append(float(x))
    by_part = {
        d.fact.id: tuple(max(xs) for xs in zip(per[d.fact.id], *(per[o] for o in pairs.get(d.fact.id, ()))))
        for d in read
    }
    return {f: max(xs, default=-math.inf) for f, xs in by_part.items()}, len(ids), by_part


def _inherited(d: FactDecision, recalled: dict[str, Recalled], pairs: dict[str, tuple[str, ...]]) -> float:
    """A fact's recall score: the better of its own and its counterpart's (cover or truth)."""
    own = recalled[d.fact.id].score if d.fact.id in recalled else d.score
    return max([own, *(recalled[o].score for o in pairs.get(d.fact.id, ()))])


def _one_per_event_first(ranked: list[FactDecision]) -> list[str]:
    """Best fact of each event first, then the rest: a capped reply covers more events."""
    seen: set[str] = set()
    first: list[str] = []
    rest: list[str] = []
    for d in ranked:
        (rest if d.fact.event_id in seen else first).append(d.fact.id)
        seen.add(d.fact.event_id)
    return first + rest
