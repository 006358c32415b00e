"""A reply is a composite: the facts it tells together must pass the composite rule.

Each fact of a reply may be allowed on its own and still not be tellable together with the
others (docs/DESIGN.md sec. 3): a retention bonus whitelisted to the family (L0) and a house offer at
L2 have an L0 ceiling together, which only someone whitelisted on *both* passes. So the facts
one reply would disclose are judged as one :class:`~epmem.policy.calculus.Composite` for every
reader; when that fails, the most relevant subset that passes is kept (greedily, best first,
covers counting like any fact) and the others are held back, each with the reason.

Across replies (epmem/reply/cumulative.py), each reader's composite of a matter also holds the
facts of that matter the reader already knows: a fact that would complete, with an earlier
reply, a set the reader may not know together is held back, naming that reply's record.
``per_matter``: one reply's facts are judged matter by matter rather than all as one (facts of
unrelated events reveal nothing together; a missed link then fails open, so it is a setting).

A message that asks several questions gets several answers (``answers``: the facts each
question chose). Each answer is its own composite, and the answers are judged together matter
by matter, as two replies are: "when's the big day at church? and did you catch anything at
Kiekrz?" is told the First Communion and the carp, as two messages would be, and an answer of
the same matter as another (a cover and its truth, linked events) still counts against it. A
fact no question chose (a model's pick) is judged with every other fact of the reply.

Only facts already allowed one by one reach this step, so what is held back never depends on
a fact the audience may not know.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from epmem.policy.calculus import Composite, Gate, Recipient, judge_composite
from epmem.reply.cumulative import Earlier, Prior


@dataclass(frozen=True, slots=True)
class HeldBack:
    """A fact kept out of a reply because telling it with the others breaks the composite rule."""

    fact_id: str
    #: the facts it could not be told with, and the first reader the composite denied.
    with_facts: tuple[str, ...]
    recipient: str
    reason: str
    #: what the reader already knew that counted: (fact, the record of the reply that told it).
    earlier: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "fact": self.fact_id,
            "with": list(self.with_facts),
            "recipient": self.recipient,
            "reason": self.reason,
        }
        if self.earlier:
            out["earlier"] = [{"fact": f, "record": r} for f, r in self.earlier]
        return out


def _why(trial: Composite, denied: Recipient) -> tuple[str, str]:
    verdict = judge_composite(trial, denied).first_denial()
    why = f"{verdict[0]}: {verdict[1].explain()}" if verdict else "composite denied"
    return f"composite L{trial.level}{' ' + trial.domain if trial.domain else ''}", why


def _across(
    group: list[Gate], matter: str, audience: Sequence[Recipient], earlier: Earlier
) -> tuple[Recipient, Composite, list[Prior]] | None:
    """The first reader for whom this reply's facts of ``matter`` and what they already know
    of it may not be told together (with that composite and the known facts in it)."""
    told = {g.fact_id for g in group}
    for r in audience:
        prior = earlier.prior(r.id, matter, told)
        if prior:
            trial = Composite.of([*group, *(p.gate for p in prior)])
            if not trial.allows(r):
                return r, trial, prior
    return None


def limit_to_composite(
    gates: Sequence[Gate],
    audience: Sequence[Recipient],
    earlier: Earlier | None = None,
    matter_of: dict[str, str] | None = None,
    per_matter: bool = False,
    answers: Sequence[Sequence[str]] = (),
) -> tuple[list[str], list[HeldBack]]:
    """``gates`` best first; ``matter_of``: fact id -> its matter (its event when not linked);
    ``answers``: for a message of several questions, the facts each chose.
    Returns (fact ids kept, in order; what was held back and why)."""
    earlier = earlier or Earlier()
    matter_of = matter_of or {}
    asked_by = _answering(answers)
    kept: list[Gate] = []
    held: list[HeldBack] = []
    for gate in gates:
        matter = matter_of.get(gate.fact_id, gate.fact_id)
        same = [g for g in kept if matter_of.get(g.fact_id, g.fact_id) == matter] + [gate]
        together = same if per_matter else [g for g in kept if g in same or _one_answer(asked_by, g, gate)] + [gate]
        trial = Composite.of(together)
        denied = next((r for r in audience if not trial.allows(r)), None)
        if denied is not None:
            what, why = _why(trial, denied)
            with_facts = tuple(g.fact_id for g in together[:-1])
            held.append(HeldBack(gate.fact_id, with_facts, denied.id, f"{what} denies {denied.id} ({why})"))
            continue
        across = _across(same, matter, audience, earlier)
        if across is not None:
            r, trial, prior = across
            what, why = _why(trial, r)
            named = ", ".join(
                f"{p.known.fact_id} in reply {p.known.record} ({p.known.status} {p.known.time[:19]})" for p in prior
            )
            held.append(
                HeldBack(
                    gate.fact_id,
                    tuple(g.fact_id for g in same[:-1]),
                    r.id,
                    f"{what} with what {r.id} was told before ({named}) denies {r.id} ({why})",
                    tuple((p.known.fact_id, p.known.record) for p in prior),
                )
            )
            continue
        kept.append(gate)
    return [g.fact_id for g in kept], held


def _answering(answers: Sequence[Sequence[str]]) -> dict[str, frozenset[int]]:
    """Fact id -> the questions (by index) whose answer it is; empty for one question."""
    if len(answers) < 2:
        return {}
    out: dict[str, set[int]] = {}
    for i, facts in enumerate(answers):
        for f in facts:
            out.setdefault(f, set()).add(i)
    return {f: frozenset(q) for f, q in out.items()}


def _one_answer(asked_by: dict[str, frozenset[int]], a: Gate, b: Gate) -> bool:
    """Whether two facts are told as one answer: always for a message of one question, and for
    a fact no question chose (fail closed); else when a question chose both."""
    if a.fact_id not in asked_by or b.fact_id not in asked_by:
        return True
    return bool(asked_by[a.fact_id] & asked_by[b.fact_id])
