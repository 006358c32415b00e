"""The oracle owner of ``bench scenarios --mode pipeline --review`` (shared/bench/SCENARIOS.md).

The delegate asks; the oracle answers each question from the scenario's gold annotations and
nothing else: only the fact that was asked, with the gold annotation of its counterpart (the
gold fact whose canary the asked fact's text carries: the same thing the metrics count as
revealing it), or "keep private" when the asked fact reveals no gold fact. The delegate's own
loop decides how many questions: a small batch, learn from the answers, ask again only what is
still unclear (epmem.ingest.review.ReviewQueue.next_batch / relearn), until nothing waits or the
delegate's question budget for the import is spent.
"""

from __future__ import annotations

from dataclasses import dataclass

from epmem.ingest.review import Answer, ReviewQueue
from epmem.memory.facts import Fact
from epmem.scenario import GoldFact, Scenario

from benchmarks.pipeline import origin


@dataclass(frozen=True, slots=True)
class ReviewRun:
    questions: int
    rounds: int
    learned: int


def counterpart(fact: Fact, scenario: Scenario) -> GoldFact | None:
    """The gold fact an extracted fact reveals: its canary is in the text. Several: the one of
    the same session and version first, then the strictest (the owner would not loosen a
    statement that also tells a stricter thing)."""
    text = fact.text.casefold()
    hits = [g for g in scenario.facts if g.canary.casefold() in text]
    if not hits:
        return None
    return min(hits, key=lambda g: (g.session != origin(fact), g.version != fact.version, g.level, g.id))


def answer_for(fact: Fact, scenario: Scenario) -> Answer:
    gold = counterpart(fact, scenario)
    if gold is None:
        return Answer.private(fact.id)
    return Answer.set(fact.id, gold.category, gold.level, gold.domain, gold.whitelist, gold.blacklist)


async def run_review(queue: ReviewQueue, scenario: Scenario, budget: int | None = None) -> ReviewRun:
    """Ask until nothing waits (or ``budget`` questions); relearn after every batch."""
    asked = rounds = learned = 0
    while budget is None or asked < budget:
        batch = await queue.next_batch()
        if not batch:
            break
        rounds += 1
        for q in batch[: None if budget is None else budget - asked]:
            fact = await queue.memory.get(q.fact_id)
            if fact is None:
                continue
            await queue.apply(answer_for(fact, scenario))
            asked += 1
        learned += len(await queue.relearn())
    return ReviewRun(asked, rounds, learned)
