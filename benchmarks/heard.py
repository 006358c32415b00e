"""Heard it from you, measured (shared/bench/SCENARIOS.md ``heard_opened``).

Two figures beside a pipeline run's completeness:

- the **heard ceiling**: of the gold ``may`` facts of every (question, asker) pair, the share
  that every reader heard said, counted from the scenario file alone (each reader is a
  participant of the gold fact's session). It is what a delegate that tells people only what
  they heard, and asks the owner nothing, could reach at best; the acceptance bound is a
  share of it.
- **heard_opened**: facts a reply told because a reader heard them said: a disclosed fact
  whose verdict for some reader rests on having heard it (the calculus's ``heard it in ...``
  reason), so that without it the fact would not have been told.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from epmem.scenario import Scenario, asker_members

#: the reason the calculus gives when having heard a fact said opened it (epmem/policy/calculus.py).
HEARD_REASON = "(heard it in "


def heard_ceiling(scenario: Scenario) -> tuple[int, int]:
    """(may facts every reader heard said, all may facts) over the scenario's answer pairs."""
    present = {s.id: set(s.participants) for s in scenario.sessions}
    session_of = {f.id: f.session for f in scenario.facts}
    heard = total = 0
    for item in scenario.tasks.answer:
        for asker, gold in item.askers.items():
            readers = asker_members(asker)
            for fid in gold.may:
                total += 1
                there = present.get(session_of.get(fid) or "", set())
                heard += all(r in there for r in readers)
    return heard, total


def heard_opened(body: Mapping[str, Any]) -> int:
    """Facts a reply's record disclosed because a reader heard them said."""
    disclosed = set(body.get("disclosed", []))
    return sum(
        1
        for c in body.get("candidates", [])
        if c.get("fact") in disclosed and any(HEARD_REASON in str(v) for v in (c.get("verdicts") or {}).values())
    )
