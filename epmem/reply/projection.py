"""From recalled events to the audience-safe storyline (DESIGN sec. 4).

Per truth fact: the truth if every reader may know it, else the covers of it that every reader
may know, else nothing. Covers pass the calculus like any fact: the people in on the real
story are not automatically in on every cover told to others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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

    def as_dict(self) -> dict[str, object]:
        return {
            "fact": self.fact.id,
            "event": self.fact.event_id,
            "version": self.fact.version,
            "score": round(self.score, 4),
            "allowed": self.allowed,
            "used": self.used,
            "verdicts": {rid: v.explain() for rid, v in self.verdicts},
        }


@dataclass(frozen=True, slots=True)
class Projection:
    decisions: tuple[FactDecision, ...]

    @property
    def used(self) -> list[FactDecision]:
        return [d for d in self.decisions if d.used]


def _decide(gate: Gate, fact: Fact, score: float, audience: Sequence[Recipient]) -> FactDecision:
    verdicts = tuple((r.id, judge(gate, r)) for r in audience)
    return FactDecision(fact, score, all(v.allowed for _, v in verdicts), verdicts)


def project(
    events: Sequence[RecalledEvent], rulebook: Rulebook, audience: Sequence[Recipient], relative_cut: float
) -> Projection:
    """Adjudicate every recalled fact for the whole audience and pick the storyline.

    The relative relevance cut is applied to what may be said only: were it applied before
    adjudication, a highly relevant secret could silence a weakly relevant permitted fact,
    and the asker could tell from the silence that a secret exists.
    """
    decided: list[FactDecision] = []
    chosen: set[str] = set()
    event_score: dict[str, float] = {}
    for event in events:
        decisions = {r.fact.id: _decide(rulebook.gate(r.fact), r.fact, r.score, audience) for r in event.facts}
        decided.extend(decisions.values())
        truths = [d for d in decisions.values() if d.fact.version == "truth"]
        covers = [d for d in decisions.values() if d.fact.version == "cover" and d.allowed]
        picked: list[FactDecision] = []
        for truth in truths:
            if truth.allowed:
                picked.append(truth)
            else:
                picked.extend(c for c in covers if c.fact.covers in (truth.fact.id, None))
        if not truths:
            picked.extend(covers)
        for d in picked:
            chosen.add(d.fact.id)
            event_score[d.fact.id] = event.score
    if chosen:
        top = max(event_score.values())
        chosen = {fid for fid in chosen if event_score[fid] >= relative_cut * top}
    return Projection(
        tuple(
            FactDecision(d.fact, d.score, d.allowed, d.verdicts, d.fact.id in chosen) for d in decided
        )
    )
