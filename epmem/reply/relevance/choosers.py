"""The choosers, one per kind of question: open and state questions (:func:`choose_open`), and
the specific ones (:func:`choose_specific`: yes/no, when, where, who, what). Each takes a
:class:`~epmem.reply.relevance.reading.Reading` and returns what it chose; what they share
(the stand-out event, the weakly recalled facts the cross-encoder rescues) is
:func:`_weighable`. What each rule is for: epmem/reply/relevance/__init__.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from epmem.language.english import asks_yes_or_no
from epmem.memory.recall import Recalled
from epmem.reply.projection import FactDecision
from epmem.reply.relevance.reading import Logits, Reading
from epmem.reply.rumour import claim_words, is_rumour, speaks_to


@dataclass(frozen=True, slots=True)
class Chosen:
    chosen: list[str]
    scores: dict[str, float]
    reranked: int
    left_out: dict[str, str]
    logits: dict[str, float]


def choose_open(r: Reading) -> Chosen:
    """Open and state questions: every event the storyline has, best first, down to a share of
    the best recall score; the cross-encoder only vetoes what it is sure is not about it."""
    c = r.config
    read = r.logits([d for d in r.pool if r.embedded[d.fact.id] < c.open_veto_recall])
    logit, reranked = read.best, read.read
    veto = c.open_veto if r.kind == "open" else c.state_veto
    left_out = {
        f: f"cross-encoder {x:.1f} < {veto}: not about the question"
        for f, x in logit.items()
        if x < veto and r.embedded[f] < c.open_veto_recall
    }
    ranked, rescued = _weighable(r, logit, left_out)
    own = r.own
    top = max((own[d.fact.id] for d in ranked if d.fact.id not in rescued), default=0.0)
    cut = c.relative_cut * top
    kept = [d for d in ranked if own[d.fact.id] >= cut or d.fact.id in rescued]
    if c.complete_events:
        told = {d.fact.event_id for d in kept}
        kept = [d for d in ranked if d.fact.event_id in told]
    scores = {d.fact.id: own[d.fact.id] for d in kept}
    left_out.update(
        {
            f: f"score {own[f]:.2f} below the cut (recall {r.embedded[f]:.2f}, MaxSim {m:.2f})"
            for f, m in r.sims.items()
            if f not in scores and f not in left_out
        }
    )
    return Chosen(_one_per_event_first(kept), scores, reranked, left_out, logit)


def choose_specific(r: Reading) -> Chosen:
    """Yes/no, when, where, who, what: recall score plus the cross-encoder's sigmoid; the best
    event answers, others within ``event_margin`` and within ``logit_margin`` of it; a rumour
    only by what speaks to its claim."""
    c = r.config
    read = r.logits(r.pool)
    logit, by_part = _covers_stand_in(r, read)
    reranked = read.read
    left_out = {f: f"cross-encoder {x:.1f} < {c.veto}: does not answer it" for f, x in logit.items() if x < c.veto}
    ranked, _ = _weighable(r, logit, left_out)
    scores = {
        d.fact.id: r.own[d.fact.id]
        + (c.rerank_weight / (1.0 + math.exp(-logit[d.fact.id] / c.rerank_temperature)) if d.fact.id in logit else 0.0)
        for d in ranked
    }
    sure = {f for f, x in logit.items() if x >= c.answers}
    chosen = _best_events(r, ranked, scores, sure, left_out)
    chosen = _within_logit_margin(r, chosen, {d.fact.id: d.fact.event_id for d in r.pool}, logit, by_part, left_out)
    if is_rumour(r.question, asks_yes_or_no):
        chosen = _on_the_claim(r.question, chosen, {d.fact.id: d for d in r.pool}, r.recalled, r.pairs, left_out)
    return Chosen(chosen, scores, reranked, left_out, logit)


def _covers_stand_in(r: Reading, read: Logits) -> tuple[dict[str, float], dict[str, tuple[float, ...]]]:
    """A cover is read with its truth: it is the owner's answer to questions about the secret
    it stands for. But where a fact the asker may know answers the question by its own words,
    a cover that does not answer by its own is read by its own words: it stands in for its
    truth, never for an answer the asker may be told. "Is it true Thaís went to the police about
    the missing ampoules?" is answered by her report to COREN, which the asker may know, not by
    the dentist story that covers a hearing about those ampoules."""
    covers = {d.fact.id for d in r.pool if d.fact.version == "cover" and d.fact.id in read.alone}
    answered = any(x >= r.config.answers for f, x in read.alone.items() if f not in covers)
    if not answered:
        return read.best, read.by_part
    own = {f for f in covers if read.alone[f] < r.config.answers}
    best = {f: read.alone[f] if f in own else x for f, x in read.best.items()}  # alone is never above best
    by_part = {f: tuple(min(x, read.alone[f]) for x in xs) if f in own else xs for f, xs in read.by_part.items()}
    return best, by_part


def _weighable(r: Reading, logit: dict[str, float], left_out: dict[str, str]) -> tuple[list[FactDecision], set[str]]:
    """The pool less what is left out, and which of its facts recall found only weakly but the
    cross-encoder is sure answer (``rescue_logit``); a weak fact it is not sure of is left out."""
    _stands_out(r, logit, left_out)
    own, least = r.own, r.least
    rescued = {
        d.fact.id for d in r.pool if own[d.fact.id] < least and logit.get(d.fact.id, -math.inf) >= r.config.rescue_logit
    }
    left_out.update(
        {
            d.fact.id: f"recall {own[d.fact.id]:.2f} < {least} and the cross-encoder is not sure it answers"
            for d in r.pool
            if own[d.fact.id] < least and d.fact.id not in rescued and d.fact.id not in left_out and d.fact.id in logit
        }
    )
    ranked = [d for d in r.pool if d.fact.id not in left_out and (own[d.fact.id] >= least or d.fact.id in rescued)]
    return ranked, rescued


def _stands_out(r: Reading, logit: dict[str, float], left_out: dict[str, str]) -> None:
    """When every fact read was left out as not about the question, put back the event that
    recall scores at least ``stand_out`` above every other event (see relevance-zh.yaml)."""
    if not logit or any(f not in left_out for f in logit):
        return
    best: dict[str, float] = {}
    for d in r.pool:
        best[d.fact.event_id] = max(best.get(d.fact.event_id, -math.inf), r.own[d.fact.id])
    if len(best) < 2:
        return
    top, second = sorted(best.values(), reverse=True)[:2]
    if top - second < r.config.stand_out:
        return
    for d in r.pool:
        if best[d.fact.event_id] == top:
            left_out.pop(d.fact.id, None)


def _best_events(
    r: Reading, weighed: list[FactDecision], scores: dict[str, float], sure: set[str], left_out: dict[str, str]
) -> list[str]:
    """The best event, and others within ``event_margin`` of it; an event answers only if a
    fact of it reaches the floor or the cross-encoder is sure it answers (``sure``)."""
    best: dict[str, float] = {}
    for d in weighed:
        if scores[d.fact.id] >= r.config.floor or d.fact.id in sure:
            best[d.fact.event_id] = max(best.get(d.fact.event_id, -math.inf), scores[d.fact.id])
    if not best:  # nothing is good enough: fail closed, and say so
        left_out.update({d.fact.id: f"relevance {scores[d.fact.id]:.2f} < floor {r.config.floor}" for d in weighed})
        return []
    top = max(best.values())
    keep = {e for e, s in best.items() if s >= top - r.config.event_margin}
    kept = sorted((d for d in weighed if d.fact.event_id in keep), key=lambda d: -scores[d.fact.id])
    return [d.fact.id for d in kept]


def _within_logit_margin(
    r: Reading,
    chosen: list[str],
    event_of: dict[str, str],
    logit: dict[str, float],
    by_part: dict[str, tuple[float, ...]],
    left_out: dict[str, str],
) -> list[str]:
    """Leave out the chosen events the cross-encoder rates far below the best chosen one,
    once the cross-encoder says that one answers (``logit_margin``, ``answers``); unless the event
    is, within the same margin, the best answer to a part of the question of its own: "Is
    Marcus working on Fridays this term, and what is he preparing for September?" has two
    best answers, and the second must not be measured against the first."""
    c = r.config
    best = best_by_event(chosen, event_of, logit)
    if not best or max(best.values()) < c.answers:
        return chosen
    cut = max(best.values()) - c.logit_margin
    keep = {e for e, x in best.items() if x >= cut} | _best_per_part(r, chosen, event_of, by_part)
    out = [f for f in chosen if event_of[f] not in best or event_of[f] in keep]
    left_out.update(
        {
            f: f"cross-encoder {best[event_of[f]]:.1f}: more than {c.logit_margin} below the best event's"
            for f in chosen
            if f not in out
        }
    )
    return out


def _best_per_part(
    r: Reading, chosen: list[str], event_of: dict[str, str], by_part: dict[str, tuple[float, ...]]
) -> set[str]:
    """The events within ``logit_margin`` of the best answer to some part of the question
    that the cross-encoder says answers it (at least ``answers``)."""
    keep: set[str] = set()
    for p in range(min((len(v) for v in by_part.values()), default=0)):
        best = best_by_event(chosen, event_of, {f: v[p] for f, v in by_part.items()})
        top = max(best.values(), default=-math.inf)
        if top >= r.config.answers:
            keep |= {e for e, x in best.items() if x >= top - r.config.logit_margin}
    return keep


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


def _one_per_event_first(ranked: list[FactDecision]) -> list[str]:
    """Best fact of each event first, then the rest: a capped reply covers more events."""
    seen: set[str] = set()
    first: list[str] = []
    rest: list[str] = []
    for d in ranked:
        (rest if d.fact.event_id in seen else first).append(d.fact.id)
        seen.add(d.fact.event_id)
    return first + rest
