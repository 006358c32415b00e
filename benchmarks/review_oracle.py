"""The oracle owner of ``bench scenarios --mode pipeline --review`` (shared/bench/SCENARIOS.md).

The delegate asks; the oracle answers each question from the scenario's gold annotations and
nothing else: only the facts the question shows (the asked fact and ``Question.also``, which
the one answer settles together), each by its counterpart (the gold fact whose canary its text
carries: the same thing the metrics count as revealing it). A question none of whose facts
reveals a gold fact gets "keep private". One whose facts reveal several gold facts with
different audiences gets what an honest owner would answer for all of them at once: only the
people all of them let know (:func:`strictest`; the answer may then be stricter than one of
them, never looser than any). The delegate's own loop
decides how many questions: a small batch, learn from the answers, ask again only what is
still unclear (epmem.ingest.review.ReviewQueue.next_batch / relearn), until nothing waits or
the delegate's question budget for the import is spent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from epmem.ingest.review import ReviewAnswer, Question, ReviewQueue
from epmem.memory.facts import Fact
from epmem.policy.calculus import STRANGER, Recipient, Rulebook, judge
from epmem.policy.model import STRANGER_ID
from epmem.scenario import GoldFact, Scenario

from benchmarks.pipeline import origin


@dataclass(frozen=True, slots=True)
class ReviewRun:
    questions: int
    rounds: int
    learned: int
    #: facts settled by an answer (the asked ones and the rest of their events).
    settled: int = 0
    #: questions none of whose facts reveals a gold fact (answered "keep private").
    blank: int = 0


def counterpart(fact: Fact, scenario: Scenario) -> GoldFact | None:
    """The gold fact an extracted fact reveals: its canary is in the text. Several: the one of
    the same session and version first, then the strictest (the owner would not loosen a
    statement that also tells a stricter thing)."""
    text = fact.text.casefold()
    hits = [g for g in scenario.facts if g.canary.casefold() in text]
    if not hits:
        return None
    return min(hits, key=lambda g: (g.session != origin(fact), g.version != fact.version, g.level, g.id))


def _audience(rulebook: Rulebook, people: Sequence[Recipient], gold: GoldFact) -> frozenset[str]:
    gate = rulebook.gate(gold.to_fact())
    return frozenset(r.id for r in people if judge(gate, r).allowed)


def strictest(golds: Sequence[GoldFact], scenario: Scenario) -> GoldFact:
    """One annotation for several gold facts shown in one question: one of them whose audience
    is all of theirs in common if there is one; else the strictest one's category at level 0
    with exactly the people all of them let know whitelisted, and every blacklist."""
    if len(golds) == 1:
        return golds[0]
    policy = scenario.effective_policy()
    rulebook = Rulebook(policy)
    people = [STRANGER, *(rulebook.recipient(c) for c in policy.contacts if c != STRANGER_ID)]
    audiences = {g.id: _audience(rulebook, people, g) for g in golds}
    common = frozenset.intersection(*audiences.values())
    exact = [g for g in golds if audiences[g.id] == common]
    if exact:
        return min(exact, key=lambda g: g.id)
    base = min(golds, key=lambda g: (g.level, g.id))
    white = sorted(common - {STRANGER_ID})
    black = sorted({b for g in golds for b in g.blacklist} - set(white))
    return base.model_copy(update={"level": 0, "whitelist": white, "blacklist": black})


def truth_of_cover(fact: Fact, scenario: Scenario, stored: Sequence[Fact]) -> Fact | None:
    """The stored fact that tells the truth ``fact``'s gold fact is the cover story of (its
    gold fact is that truth; a truth version, the lowest id), or None: ``fact`` is no cover, is
    stored as the cover of that truth already, or its truth was never stored. A cover the
    extractor attached to another fact (the message before, say) is named again, as the owner
    reading the consultation's "covers" line would."""
    gold = counterpart(fact, scenario)
    if gold is None or gold.version != "cover" or gold.covers is None:
        return None
    if fact.version == "cover" and fact.covers is not None:
        current = next((f for f in stored if f.id == fact.covers), None)
        told = counterpart(current, scenario) if current is not None else None
        if told is not None and told.id == gold.covers:
            return None  # a stored cover already stands in for what it covers
    truths = [
        f
        for f in stored
        if f.id != fact.id
        and f.version == "truth"
        and (g := counterpart(f, scenario)) is not None
        and g.id == gold.covers
    ]
    return min(truths, key=lambda f: f.id) if truths else None


def answer_for(fact: Fact, scenario: Scenario, shown: Sequence[Fact] = ()) -> ReviewAnswer:
    """The answer about ``fact`` and the other facts the question shows with it."""
    golds = {g.id: g for f in (fact, *shown) for g in [counterpart(f, scenario)] if g is not None}
    if not golds:
        return ReviewAnswer.private(fact.id)
    gold = strictest(sorted(golds.values(), key=lambda g: g.id), scenario)
    return ReviewAnswer.set(fact.id, gold.category, gold.level, gold.domain, gold.whitelist, gold.blacklist)


async def answer_question(queue: ReviewQueue, q: Question, scenario: Scenario) -> ReviewAnswer | None:
    fact = await queue.memory.get(q.fact_id)
    if fact is None:
        return None
    shown = [g for fid in q.also for g in [await queue.memory.get(fid)] if g is not None]
    return answer_for(fact, scenario, shown)


async def run_review(queue: ReviewQueue, scenario: Scenario, budget: int | None = None) -> ReviewRun:
    """Ask until nothing waits (or ``budget`` questions); relearn after every batch."""
    asked = rounds = learned = settled = blank = 0
    while budget is None or asked < budget:
        batch = await queue.next_batch()
        if not batch:
            break
        rounds += 1
        for q in batch[: None if budget is None else budget - asked]:
            answer = await answer_question(queue, q, scenario)
            if answer is None:
                continue
            applied = await queue.apply(answer)
            asked += 1
            blank += answer.kind == "private"
            settled += len(applied.facts)
        learned += len(await queue.relearn())
    return ReviewRun(asked, rounds, learned, settled, blank)
