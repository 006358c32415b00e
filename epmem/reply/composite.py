"""A reply is a composite: the facts it tells together must pass the composite rule.

Each fact of a reply may be allowed on its own and still not be tellable together with the
others (docs/DESIGN.md sec. 3): a retention bonus whitelisted to the family (L0) and a house offer at
L2 have an L0 ceiling together, which only someone whitelisted on *both* passes. So the facts
one reply would disclose are judged as one :class:`~epmem.policy.calculus.Composite` for every
reader; when that fails, the most relevant subset that passes is kept (greedily, best first,
covers counting like any fact) and the others are held back, each with the reason.

Only facts already allowed one by one reach this step, so what is held back never depends on
a fact the audience may not know.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from epmem.policy.calculus import Composite, Gate, Recipient, judge_composite


@dataclass(frozen=True, slots=True)
class HeldBack:
    """A fact kept out of a reply because telling it with the others breaks the composite rule."""

    fact_id: str
    #: the facts it could not be told with, and the first reader the composite denied.
    with_facts: tuple[str, ...]
    recipient: str
    reason: str

    def as_dict(self) -> dict[str, object]:
        return {"fact": self.fact_id, "with": list(self.with_facts), "recipient": self.recipient, "reason": self.reason}


def limit_to_composite(gates: Sequence[Gate], audience: Sequence[Recipient]) -> tuple[list[str], list[HeldBack]]:
    """``gates`` best first; returns (fact ids kept, in order; what was held back and why)."""
    kept: list[Gate] = []
    held: list[HeldBack] = []
    for gate in gates:
        trial = Composite.of([*kept, gate])
        denied = next((r for r in audience if not trial.allows(r)), None)
        if denied is None:
            kept.append(gate)
            continue
        verdict = judge_composite(trial, denied).first_denial()
        why = f"{verdict[0]}: {verdict[1].explain()}" if verdict else "composite denied"
        held.append(
            HeldBack(
                gate.fact_id,
                tuple(g.fact_id for g in kept),
                denied.id,
                f"composite L{trial.level}{' ' + trial.domain if trial.domain else ''} denies {denied.id} ({why})",
            )
        )
    return [g.fact_id for g in kept], held
