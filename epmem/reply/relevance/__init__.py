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

Every kind: a fact that says nothing the message does not (:func:`~epmem.reply.relevance.reading.repeats`:
the asker's own remark, open to them because they heard it) is no answer and sets no cut; a
yes/no question is not read for it, since the fact that repeats it answers it.

Open and state questions also hear a third model (``match_weight``): a late-interaction
MaxSim (epmem/embedding/late_interaction.py, ColBERT token vectors) is added to the recall score
of the best ``match_limit`` facts, centred on the median of those it read for this question, so
that a typical fact keeps its score (no fitted centre: the question's own facts set it). "How's your
health, Chucho?" is near "Chucho's son got into engineering" for the pooled embedder; token by
token, nothing of the son's admission covers "health", and the fact falls below the cut.

Failing closed: whatever is left out because it is not sure to answer is named in the audit
(``Choice.left_out``, with the reason), so the owner can see what was not said and why.

The cross-encoder (epmem/embedding/cross_encoder.py) reads question and fact together; it reads
at most ``rerank_limit`` facts (the best by recall), so its cost is bounded per reply. Without
it (``rerank_weight = 0`` or no model), relevance is the recall score alone and nothing is
vetoed. The parameters were picked on development scenarios only
(benchmarks/tools/tune_relevance.py); the held-out sets are reported, never tuned on.

The numbers are data, one file per language (epmem/language/relevance-<code>.yaml, checked at
start: :mod:`epmem.language.settings`); the language of the question (epmem/language/) says its
kind, how "you" is named, its parts and, where the cross-encoder cannot read it, the stand-in
that reads in its place (Chinese: the words a fact shares with the question). The choosers, one
per kind of question: epmem/reply/relevance/choosers.py.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from epmem.language import DEFAULT, LanguageSpec, QuestionKind, RelevanceConfig, Reranker, get, of
from epmem.language.english import addressed_to, asks_yes_or_no, english_kind, question_parts
from epmem.memory.recall import RecalledEvent
from epmem.reply.projection import Projection
from epmem.reply.relevance.multilingual import multilingual_reader, reads_other_language
from epmem.reply.relevance.choosers import best_by_event, choose_open, choose_specific
from epmem.reply.relevance.reading import OPEN_KINDS, called_as_in_facts, counterparts, owner_called, read

__all__ = [
    "Choice",
    "QuestionKind",
    "Relevance",
    "RelevanceConfig",
    "Reranker",
    "addressed_to",
    "asks_yes_or_no",
    "best_by_event",
    "counterparts",
    "english_kind",
    "owner_called",
    "called_as_in_facts",
    "question_kind",
    "question_parts",
]


def question_kind(question: str) -> QuestionKind:
    """The kind of ``question``, as the language it is written in reads it."""
    return of(question).kind(question)


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
    #: a message that asks several questions: the facts each question chose, one tuple per
    #: question in the message's order (empty for one question). Each question's answer is its
    #: own composite (epmem/reply/composite.py): two questions in one message are told what two
    #: messages would be.
    answers: tuple[tuple[str, ...], ...] = ()
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
        if self.answers:
            out["answers"] = [list(a) for a in self.answers]
        return out if self.chooser is None else {**out, **self.chooser}


class Relevance:
    """The relevance step: ``config`` overrides the default language's settings (English),
    ``languages`` another language's (by code; the tuning tools' grid points); ``reranker`` is
    the cross-encoder and ``matcher`` the late-interaction model, read where a language has no
    stand-in of its own and its settings weigh them."""

    def __init__(
        self,
        config: RelevanceConfig | None = None,
        reranker: Reranker | None = None,
        matcher: Reranker | None = None,
        languages: Mapping[str, RelevanceConfig] | None = None,
    ) -> None:
        self.config = config or get(DEFAULT).relevance
        self.languages = dict(languages or {})
        self.model = reranker
        self.matcher = matcher

    def config_for(self, question: str) -> RelevanceConfig:
        """The settings a question is read with: its language's."""
        return self._config(of(question))

    def _config(self, spec: LanguageSpec) -> RelevanceConfig:
        if spec.code == DEFAULT:
            return self.config
        return self.languages.get(spec.code, spec.relevance)

    def choose(
        self,
        question: str,
        events: Sequence[RecalledEvent],
        projection: Projection,
        owner: str = "",
        asked: Mapping[str, Sequence[RecalledEvent]] | None = None,
        people: Sequence[Sequence[str]] = (),
    ) -> Choice:
        """``events`` as recalled (covers are weighed by their truth too: a cover is the owner's
        chosen answer to questions about the secret it stands for); ``projection`` the storyline;
        ``owner`` the owner's name (the cross-encoder reads "you" as the owner, named);
        ``people`` each contact's name and aliases (it reads a contact as the facts name them).

        ``asked``: a message that asks several questions, each with what recall found for it
        alone (the language's ``questions``). Each is answered on its own, with its own kind,
        scores and cuts, and the reply tells what answers any of them, the best answer of each
        first: the answer to "and r u still doing that course on saturdays?" must not set the
        cut that "how did your mãe's operation go?" is answered by."""
        if asked is not None and len(asked) > 1:
            return _together(
                question_kind(question),
                [self.choose(q, evs, _recalled_in(projection, evs), owner, people=people) for q, evs in asked.items()],
                self.config_for(question).max_facts,
            )
        started = time.perf_counter()
        spec = of(question)
        c = self._config(spec)
        reranker = spec.stand_in(owner) if spec.stand_in is not None else self.model
        if spec.stand_in is None and self.model is not None and reads_other_language(question):
            # the cross-encoder and the late-interaction model read English only
            reranker, c = multilingual_reader(), c.replace(match_weight=0.0)
        models = (reranker if c.rerank_weight > 0 else None, self.matcher if c.match_weight > 0 else None)
        r = read(spec, c, question, events, projection, owner, models, people)
        echoed = {f: "says nothing the question does not" for f in r.echoes}
        if not r.pool:
            return Choice(r.kind, (), left_out=echoed)
        out = choose_open(r) if r.kind in OPEN_KINDS else choose_specific(r)
        return Choice(
            r.kind,
            tuple(out.chosen[: c.max_facts]),
            out.scores,
            out.reranked,
            (time.perf_counter() - started) * 1000,
            {**echoed, **out.left_out},
            out.logits,
        )


def _recalled_in(projection: Projection, events: Sequence[RecalledEvent]) -> Projection:
    """The storyline's decisions about the facts of ``events`` (what one question recalled)."""
    ids = {r.fact.id for ev in events for r in ev.facts}
    return Projection(tuple(d for d in projection.decisions if d.fact.id in ids))


def _together(kind: QuestionKind, each: Sequence[Choice], limit: int) -> Choice:
    """The choices for each question of a message as one: the best answer of each question
    first, then the next of each, at most ``limit``; a fact left out by one question and chosen
    by another is chosen. ``kind``: the message's, read as one question (the audit's)."""
    chosen: list[str] = []
    for rank in range(max((len(c.chosen) for c in each), default=0)):
        for c in each:
            if rank < len(c.chosen) and c.chosen[rank] not in chosen:
                chosen.append(c.chosen[rank])
    chosen = chosen[:limit]
    scores: dict[str, float] = {}
    logits: dict[str, float] = {}
    left_out: dict[str, str] = {}
    for c in each:
        for f, x in c.scores.items():
            scores[f] = max(scores.get(f, x), x)
        for f, x in c.logits.items():
            logits[f] = max(logits.get(f, x), x)
        left_out.update({f: why for f, why in c.left_out.items() if f not in chosen and f not in left_out})
    return Choice(
        kind,
        tuple(chosen),
        scores,
        sum(c.reranked for c in each),
        sum(c.ms for c in each),
        left_out,
        logits,
        answers=tuple(tuple(f for f in c.chosen if f in chosen) for c in each),
    )
