"""From recalled events to the audience-safe storyline (docs/DESIGN.md sec. 4).

Per truth fact: the truth if every reader may know it, else the covers of it that every reader
may know, else nothing. Covers pass the calculus like any fact: the people in on the real
story are not automatically in on every cover told to others.

The storyline is what *may* be said; which of it answers the question is chosen afterwards
(epmem/reply/relevance/), among these facts only, and what is told together must then pass
the composite rule (epmem/reply/composite.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from epmem.policy.calculus import Gate, Recipient, Rulebook, Verdict, judge
from epmem.memory.facts import Fact
from epmem.memory.recall import RecalledEvent


@dataclass(frozen=True, slots=True)
class FactDecision:
    fact: Fact
    score: float
    allowed: bool
    verdicts: tuple[tuple[str, Verdict], ...]
    used: bool = False
    #: the relevance step's score (None: not scored; only storyline facts are).
    relevance: float | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "fact": self.fact.id,
            "event": self.fact.event_id,
            "version": self.fact.version,
            "score": round(self.score, 4),
            "allowed": self.allowed,
            "used": self.used,
            "verdicts": {rid: v.explain() for rid, v in self.verdicts},
        }
        if self.relevance is not None:
            out["relevance"] = round(self.relevance, 3)
        return out


@dataclass(frozen=True, slots=True)
class Projection:
    decisions: tuple[FactDecision, ...]

    @property
    def used(self) -> list[FactDecision]:
        return [d for d in self.decisions if d.used]

    def narrowed(self, keep: Sequence[str], relevance: Mapping[str, float]) -> Projection:
        """Only ``keep`` (fact ids, best first) stays used, in that order; scores recorded."""
        rank = {fid: i for i, fid in enumerate(keep)}
        decisions = [replace(d, used=d.fact.id in rank, relevance=relevance.get(d.fact.id)) for d in self.decisions]
        used = sorted((d for d in decisions if d.used), key=lambda d: rank[d.fact.id])
        return Projection(tuple(used + [d for d in decisions if not d.used]))


def _decide(gate: Gate, fact: Fact, score: float, audience: Sequence[Recipient]) -> FactDecision:
    verdicts = tuple((r.id, judge(gate, r)) for r in audience)
    return FactDecision(fact, score, all(v.allowed for _, v in verdicts), verdicts)


def project(events: Sequence[RecalledEvent], rulebook: Rulebook, audience: Sequence[Recipient]) -> Projection:
    """Adjudicate every recalled fact for the whole audience and mark the storyline: per event,
    each truth the audience may know, else its covers the audience may know."""
    decided: list[FactDecision] = []
    chosen: set[str] = set()
    for event in events:
        decisions = {r.fact.id: _decide(rulebook.gate(r.fact), r.fact, r.score, audience) for r in event.facts}
        decided.extend(decisions.values())
        truths = [d for d in decisions.values() if d.fact.version == "truth"]
        covers = [d for d in decisions.values() if d.fact.version == "cover" and d.allowed]
        for truth in truths:
            if truth.allowed:
                chosen.add(truth.fact.id)
            else:
                chosen.update(c.fact.id for c in covers if c.fact.covers in (truth.fact.id, None))
        if not truths:
            chosen.update(c.fact.id for c in covers)
    return Projection(tuple(replace(d, used=d.fact.id in chosen) for d in decided))
