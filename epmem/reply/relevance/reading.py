"""One question as the relevance step reads it: its kind, its parts, the facts it may tell and
their scores, and the models (or stand-ins) that read question and fact together.

Everything here reads only the storyline (the facts the asker may know) and a cover's truth,
as recall does: nothing a chooser decides can depend on a fact the asker may not know.
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from epmem.english_words import STOPWORDS
from epmem.language import LanguageSpec, QuestionKind, RelevanceConfig, Reranker
from epmem.memory.recall import Recalled, RecalledEvent
from epmem.reply.projection import FactDecision, Projection
from epmem.language.english import asks_yes_or_no
from epmem.textnorm import content_words, split_sentences, words
from epmem.timeparse import named_days

OPEN_KINDS: tuple[QuestionKind, ...] = ("open", "state")


@dataclass(frozen=True, slots=True)
class Reading:
    """What the choosers work from (epmem/reply/relevance/choosers.py)."""

    question: str
    kind: QuestionKind
    config: RelevanceConfig
    #: the question, owner named, whole and part by part (what the cross-encoder reads).
    parts: list[str]
    recalled: dict[str, Recalled]
    pairs: dict[str, tuple[str, ...]]
    #: each fact's recall score, a cover's the better of its own and its truth's, with the
    #: late-interaction model's MaxSim added on the kinds it weighs in on.
    own: dict[str, float]
    #: the embedder's alone: a strong one overrides the open veto.
    embedded: dict[str, float]
    #: the late-interaction model's MaxSim of each fact it read.
    sims: dict[str, float]
    #: the least recall score the kind answers with.
    least: float
    #: the facts worth weighing, best by recall first.
    pool: list[FactDecision]
    #: the cross-encoder, or the language's stand-in for it (None: recall alone).
    reranker: Reranker | None
    #: facts left out of the pool because they say nothing the question does not (:func:`repeats`).
    echoes: tuple[str, ...] = ()

    def logits(self, facts: list[FactDecision]) -> Logits:
        """The cross-encoder's logit for the best ``rerank_limit`` of ``facts`` (a cover's is the
        better of its own and its truth's: it is read with its truth, as for recall), and per
        part of the question."""
        if self.reranker is None or self.config.rerank_limit == 0 or not facts:
            return Logits({}, 0, {}, {})
        read = read_with_truth(self.reranker, self.parts, facts[: self.config.rerank_limit], self.recalled)
        return replace(
            read, best=_same_day(self, facts, read.best), alone=_same_day(self, facts, read.alone, counterparts=False)
        )


def read(
    spec: LanguageSpec,
    config: RelevanceConfig,
    question: str,
    events: Sequence[RecalledEvent],
    projection: Projection,
    owner: str,
    models: tuple[Reranker | None, Reranker | None],
    people: Sequence[Sequence[str]] = (),
) -> Reading:
    """``question`` read in ``spec``'s language with ``config``; ``models``: the reranker (or
    the language's stand-in) and the late-interaction matcher, each None when off; ``people``:
    each contact's name and aliases (:func:`called_as_in_facts`)."""
    reranker, matcher = models
    c = config
    kind = spec.kind(question)
    texts = [d.fact.text for d in projection.used]
    asked = spec.addressed_to(called_as_in_facts(question, people, texts, owner), owner_called(owner, texts))
    recalled = {r.fact.id: r for ev in events for r in ev.facts}
    pairs = counterparts(recalled)
    own = {d.fact.id: inherited(d, recalled, pairs) for d in projection.used}
    parts = spec.parts(asked, c.max_parts)
    embedded = dict(own)
    sims: dict[str, float] = {}
    if kind in c.match_kinds:
        sims = _maxsims(matcher, c, asked, projection.used, own, recalled)
        # centred on the facts read for this question: a typical one keeps its recall score
        center = statistics.median(sims.values()) if sims else 0.0
        own.update({f: own[f] + c.match_weight * (m - center) for f, m in sims.items()})
    least = c.rescue_recall if kind == "open" else c.min_recall
    weighed = [d for d in projection.used if own[d.fact.id] >= min(least, c.rescue_recall)]
    stated = statement_words(question)
    echoes = tuple(d.fact.id for d in weighed if repeats(stated, d.fact.text))
    pool = sorted((d for d in weighed if d.fact.id not in echoes), key=lambda d: -own[d.fact.id])
    return Reading(question, kind, c, parts, recalled, pairs, own, embedded, sims, least, pool, reranker, echoes)


def statement_words(question: str) -> frozenset[str]:
    """The content words of what the asker wrote, less its yes/no questions: the fact that
    repeats "Is Marcus moving to Leeds?" is its answer ("Marcus is moving to Leeds.")."""
    read = " ".join(s for s in split_sentences(question) if not asks_yes_or_no(s))
    return frozenset(content_words(words(read)))


def repeats(stated: frozenset[str], text: str) -> bool:
    """Whether a fact says nothing the message does not already say: every content word of it is
    in what the asker wrote (``stated``, :func:`statement_words`: "How is Chloé? She looked thin
    at Sunday lunch." and "Chloé looked so thin at Sunday lunch."). Told back, it answers
    nothing, and as the message's nearest fact it would set the cut that leaves out what does
    answer it."""
    said = set(content_words(words(text)))
    return bool(said) and said <= stated


def _maxsims(
    matcher: Reranker | None,
    c: RelevanceConfig,
    question: str,
    used: Sequence[FactDecision],
    own: dict[str, float],
    recalled: dict[str, Recalled],
) -> dict[str, float]:
    """The late-interaction model's MaxSim for the best ``match_limit`` facts that recall
    found (a cover's is the better of its own and its truth's, as for recall)."""
    if matcher is None or c.match_limit == 0:
        return {}
    # privacy: only facts the asker may know (and a cover's truth, as for recall) are read
    facts = sorted((d for d in used if own[d.fact.id] >= c.rescue_recall), key=lambda d: -own[d.fact.id])
    facts = facts[: c.match_limit]
    if not facts:
        return {}
    return read_with_truth(matcher, [question], facts, recalled).best


def _same_day(
    r: Reading, facts: Sequence[FactDecision], logit: dict[str, float], counterparts: bool = True
) -> dict[str, float]:
    """A question that names a calendar day ("what exactly is happening in the canteen on 15 June?")
    is answered by what happens that day: a fact read here that names the same day (or whose cover
    or truth does) is as sure an answer as the cross-encoder's surest (its ``rescue_logit``),
    whatever else the question's words say. The cross-encoder reads the request around the date
    and rates "The union is holding its general meeting on 15 June" at -3.5."""
    asked = named_days(r.question)
    if not asked:
        return logit
    out = dict(logit)
    for d in facts:
        others = r.pairs.get(d.fact.id, ()) if counterparts else ()
        texts = [d.fact.text, *(r.recalled[o].fact.text for o in others if o in r.recalled)]
        if d.fact.id in out and any(named_days(t) & asked for t in texts):
            out[d.fact.id] = max(out[d.fact.id], r.config.rescue_logit)
    return out


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


def called_as_in_facts(question: str, people: Sequence[Sequence[str]], texts: Sequence[str], owner: str = "") -> str:
    """``question`` with each contact it names by a form the facts never use ("Fer") named as
    the facts name them ("Fernanda"), as the owner's "you" is (:func:`owner_called`): the
    cross-encoder cannot know that "when is Fer's wedding?" asks about "Fernanda is getting
    married" (-5.7) unless the policy, which lists the contact's aliases, tells it. A form is a
    capitalised name or alias of one contact only: a surname two contacts share, or a word such
    as "mija", names nobody in particular; nor does a word of the owner's name ("Nguyen" for
    Nguyen Thi Lan and her brother Nguyen Van Tuan)."""
    forms = [[f for form in dict.fromkeys(names) for f in (form, *form.split()) if _is_form(f)] for names in people]
    owners: dict[str, int] = {}
    for forms_of in [*forms, [f for f in (owner, *owner.split()) if _is_form(f)]]:
        for f in set(forms_of):
            owners[f] = owners.get(f, 0) + 1
    folded: list[str] | None = None  # the facts are read only for a contact the question names
    for forms_of in forms:
        mine = [f for f in dict.fromkeys(forms_of) if owners[f] == 1]
        said = [f for f in mine if re.search(rf"(?<!\w){re.escape(f)}(?!\w)", question)]
        if not said:
            continue
        folded = folded if folded is not None else [_fold(t) for t in texts]
        uses = {f: _uses(folded, f) for f in mine}
        if any(uses[f] for f in said):
            continue
        used = max(mine, key=uses.__getitem__)
        if uses[used]:
            for f in said:
                question = re.sub(rf"(?<!\w){re.escape(f)}(?!\w)", used, question)
    return question


def _is_form(word: str) -> bool:
    """A name's form that can name someone in a question: capitalised, three letters or more,
    and no function word ("Will" for William opens "Will you be there?")."""
    return len(word.strip(".")) >= 3 and word[0].isupper() and word.casefold() not in STOPWORDS


def _uses(folded: Sequence[str], form: str) -> int:
    key = _fold(form)
    return sum(len(re.findall(rf"(?<!\w){re.escape(key)}(?!\w)", t)) for t in folded)


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


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


@dataclass(frozen=True, slots=True)
class Logits:
    """A model's reading of the facts: ``best`` over the question's parts and over each fact
    and its counterpart (a cover read with its truth, a truth with its cover; recall treats them
    the same way), ``read`` how many texts it read, ``by_part`` the best per part, and
    ``alone`` each fact's best by its own words only."""

    best: dict[str, float]
    read: int
    by_part: dict[str, tuple[float, ...]]
    alone: dict[str, float]


def read_with_truth(
    model: Reranker, questions: Sequence[str], facts: Sequence[FactDecision], recalled: dict[str, Recalled]
) -> Logits:
    """``model``'s reading of each fact in ``facts`` (:class:`Logits`)."""
    pairs = counterparts(recalled)
    read = {d.fact.id: d.fact for d in facts}
    # a fact and its counterpart are one event told two ways (counted once where words are counted)
    event_of = {d.fact.id: d.fact.event_id for d in facts}
    for d in facts:
        for other in pairs.get(d.fact.id, ()):
            read[other] = recalled[other].fact
            event_of.setdefault(other, d.fact.event_id)
    ids = list(read)
    # an answer is read alone and after the question it answered (Fact.context), the better
    # of the two: "Base goes from 92k to 118k." answers "How much is she earning?" only there.
    # Two batches: the longer readings would pad every short one in a batch of both
    batches = [[(i, read[i].text) for i in ids], [(i, read[i].found_by) for i in ids if read[i].context]]
    per: dict[str, list[float]] = {i: [] for i in ids}
    for question in questions:
        best: dict[str, float] = {}
        for texts in (b for b in batches if b):
            scored = model.score(question, [t for _, t in texts], events=[event_of[i] for i, _ in texts])
            for (i, _), x in zip(texts, scored):
                best[i] = max(best.get(i, -math.inf), float(x))
        for i in ids:
            per[i].append(best[i])
    by_part = {
        d.fact.id: tuple(max(xs) for xs in zip(per[d.fact.id], *(per[o] for o in pairs.get(d.fact.id, ()))))
        for d in facts
    }
    return Logits(
        {f: max(xs, default=-math.inf) for f, xs in by_part.items()},
        sum(map(len, batches)),
        by_part,
        {d.fact.id: max(per[d.fact.id], default=-math.inf) for d in facts},
    )


def inherited(d: FactDecision, recalled: dict[str, Recalled], pairs: dict[str, tuple[str, ...]]) -> float:
    """A fact's recall score: the better of its own and its counterpart's (cover or truth)."""
    own = recalled[d.fact.id].score if d.fact.id in recalled else d.score
    return max([own, *(recalled[o].score for o in pairs.get(d.fact.id, ()))])
