"""Where the owner's review answers fall short: per gold fact, why its audience is still wrong.

Runs each scenario in pipeline mode with the oracle owner (benchmarks/review_oracle.py), then
judges every gold fact that a permit task names by its carriers (the extracted facts with its
canary; benchmarks/pipeline.py): the gold fact's predicted audience is the union of theirs.
Each gold fact falls in one class:

- ``right``: every carrier lets exactly the gold audience know;
- ``none``: no extracted fact carries it (nobody may be told: exact only if nobody may know);
- ``never-asked``: a carrier is wrong and no carrier was put to the owner;
- ``sibling``: a carrier was asked (or settled by an answer), another one is still wrong;
- ``answered-wrong``: every carrier was settled by the owner and one is still wrong (a carrier
  that tells two gold facts takes the stricter answer, or the answer went to a near twin).

A carrier counts as wrong when it lets someone know whom the gold fact does not allow (``loose``)
or keeps someone out whom it allows (``tight``).

``--bound`` (with ``--no-review``) asks how far the owner's answers could take this annotator at
the most: an ideal owner is asked exactly the gold facts whose answer completes the most permit
tasks (a task whose facts are all fixed is counted exact), one question per gold fact, within the
question budget the review acceptance allows (30 per 100 gold facts of the set, counted as
``bench scenarios --review`` counts them). It is
optimistic on purpose: the delegate cannot know which facts are wrong, every answer is assumed
to fix all of a fact's carriers, and no question is spent on a fact without a gold counterpart.
So ``bound.exact`` (the greedy ideal owner) is an upper estimate of ``permit.exact`` with
review, and ``bound.exact_ceiling`` a true ceiling on it whatever questions are picked (each
answer counted for every task its fact is needed by); a gold fact nothing carries cannot be
fixed by any answer. Usage::

    python -m benchmarks.tools.review_gaps benchmarks/scenarios/own [--no-review [--bound [--per-100 N]]] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from epmem.ingest.review_rank import stakes
from epmem.memory.facts import Fact
from epmem.policy.calculus import STRANGER, Recipient, Rulebook, judge
from epmem.policy.model import STRANGER_ID
from epmem.scenario import GoldFact, Scenario, load_scenario, scenario_files

from benchmarks import pipeline, review_oracle
from bot.config import Settings
from bot.runtime import Runtime, embedder_from_settings


def audience(rulebook: Rulebook, people: Sequence[Recipient], fact: Fact) -> frozenset[str]:
    gate = rulebook.gate(fact)
    return frozenset(r.id for r in people if judge(gate, r).allowed)


def classify(gold: GoldFact, facts: Sequence[Fact], rulebook: Rulebook, people: Sequence[Recipient]) -> tuple[str, str]:
    want = audience(rulebook, people, gold.to_fact())
    carriers = pipeline.carriers(gold, facts)
    if not carriers:
        return "none", "" if not want else f"gold lets {sorted(want)} know"
    wrong = [(c, audience(rulebook, people, c)) for c in carriers]
    wrong = [(c, got) for c, got in wrong if got != want]
    if not wrong:
        return "right", ""
    settled = [c for c in carriers if c.state == "owner-set"]
    detail = "; ".join(
        f"{c.id}[{c.state},{c.category},L{c.effective_level()},s{stakes(c, rulebook.policy):.2f},"
        f"{'loose' if got - want else 'tight'}] {c.text[:70]!r}"
        for c, got in wrong
    )
    if not settled:
        return "never-asked", detail
    if len(settled) < len(carriers):
        return "sibling", detail
    return "answered-wrong", detail


@dataclass(frozen=True, slots=True)
class Task:
    """One permit task as the bound sees it: exact already, or the gold facts it still needs."""

    exact: bool
    needs: frozenset[str]
    fixable: bool


def ideal_owner(tasks: Sequence[Task], budget: int) -> tuple[int, int]:
    """(tasks exact, questions asked) when the owner is asked, greedily, the facts that complete
    the most tasks per question: the cheapest unfinished task first, ties by how many tasks its
    facts complete together."""
    fixed: set[str] = set()
    done = sum(t.exact for t in tasks)
    open_ = [t for t in tasks if not t.exact and t.fixable]
    while open_:

        def cost(t: Task) -> tuple[int, int]:
            missing = t.needs - fixed  # noqa: B023 (min() calls it at once)
            completes = sum(1 for u in open_ if u.needs - fixed <= missing)  # noqa: B023
            return len(missing), -completes

        best = min(open_, key=cost)
        missing = best.needs - fixed
        if len(fixed) + len(missing) > budget:
            open_.remove(best)
            continue
        fixed |= missing
        finished = [t for t in open_ if t.needs <= fixed]
        done += len(finished)
        open_ = [t for t in open_ if not t.needs <= fixed]
    return done, len(fixed)


def most_fixable(tasks: Sequence[Task], budget: int) -> int:
    """A true ceiling on the tasks exact after ``budget`` answers, whoever picks the questions:
    every task an answer completes needs that fact, so ``budget`` answers complete at most the
    tasks of the ``budget`` facts that most tasks need, added up."""
    need: Counter[str] = Counter(f for t in tasks if not t.exact and t.fixable for f in t.needs)
    return sum(t.exact for t in tasks) + sum(n for _, n in need.most_common(budget))


def needed(tasks: Sequence[Task], target: float, gold: int) -> float | None:
    """Questions per 100 gold facts the greedy ideal owner needs for ``target`` exact (None:
    no budget does, some task cannot be fixed by any answer)."""
    for budget in range(gold + 1):
        if ideal_owner(tasks, budget)[0] >= target * len(tasks):
            return round(100 * budget / gold, 1)
    return None


def permit_tasks(scenario: Scenario, facts: Sequence[Fact], kinds: dict[str, str]) -> list[Task]:
    rulebook = Rulebook(scenario.effective_policy())
    tasks = []
    for item in scenario.tasks.permit:
        exact = pipeline.task_allowed(rulebook, scenario, item.facts, item.candidates, facts) == frozenset(item.allowed)
        wrong = [f for f in item.facts if kinds[f] != "right"]
        tasks.append(
            Task(
                exact,
                frozenset(f"{scenario.name}:{f}" for f in wrong),
                all(kinds[f] != "none" for f in wrong) or not item.allowed,
            )
        )
    return tasks


async def one(path: Path, review: bool, verbose: bool, tasks: list[Task] | None = None) -> Counter[str]:
    scenario: Scenario = load_scenario(path)
    embedder = embedder_from_settings()
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="epmem-gaps-") as tmp:
        settings = Settings(data_dir=Path(tmp), llm_backend="rules", annotate_attempts=1)
        runtime = await Runtime.open(settings, policy=scenario.effective_policy(), embedder=embedder)
        try:
            await pipeline.ingest(runtime, scenario, str(path))
            if review:
                assert runtime.review is not None
                run = await review_oracle.run_review(runtime.review, scenario, await runtime.review.budget())
                counts["questions"] += run.questions
                counts["blank-questions"] += run.blank
                counts["settled-by-answers"] += run.settled
            facts = await runtime.memory.all()
            counts["extracted"] += len(facts)
            counts["gold"] += len(scenario.facts)
            policy = scenario.effective_policy()
            rulebook = Rulebook(policy)
            people = [STRANGER, *(rulebook.recipient(c) for c in policy.contacts if c != STRANGER_ID)]
            named = {f for item in scenario.tasks.permit for f in item.facts}
            kinds: dict[str, str] = {}
            for g in scenario.facts:
                if g.id not in named:
                    continue
                kind, detail = classify(g, facts, rulebook, people)
                kinds[g.id] = kind
                counts[kind] += 1
                if verbose and kind != "right":
                    print(
                        f"  {path.name} {g.id} {kind}: gold {g.category} L{g.level} "
                        f"w{g.whitelist} b{g.blacklist}: {detail}"
                    )
            if tasks is not None:
                tasks.extend(permit_tasks(scenario, facts, kinds))
        finally:
            await runtime.close()
    return counts


#: the most questions per 100 gold facts the review acceptance allows (``review.per_100_facts``).
BUDGET_PER_100 = 30


async def main(
    paths: list[Path], review: bool, verbose: bool, bound: bool = False, per_100: int = BUDGET_PER_100
) -> dict[str, object]:
    total: Counter[str] = Counter()
    tasks: list[Task] | None = [] if bound else None
    for path in scenario_files(paths):
        total += await one(path, review, verbose, tasks)
    out: dict[str, object] = dict(total)
    if tasks is not None:
        budget = per_100 * total["gold"] // 100
        done, asked = ideal_owner(tasks, budget)
        out["bound"] = {
            "permit_n": len(tasks),
            "exact_now": round(sum(t.exact for t in tasks) / len(tasks), 4),
            "budget": budget,
            "questions": asked,
            "exact": round(done / len(tasks), 4),
            "exact_ceiling": round(min(len(tasks), most_fixable(tasks, budget)) / len(tasks), 4),
            "per_100_for_0.9": needed(tasks, 0.9, total["gold"]),
            "unfixable": sum(1 for t in tasks if not t.exact and not t.fixable),
        }
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--no-review", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--bound", action="store_true", help="with --no-review: the ideal owner's best exact")
    parser.add_argument(
        "--per-100",
        type=int,
        default=BUDGET_PER_100,
        help="the bound's question budget per 100 gold facts (default: the acceptance's 30)",
    )
    args = parser.parse_args()
    if args.bound and not args.no_review:
        parser.error("--bound needs --no-review (it starts from the annotator's own work)")
    print(json.dumps(asyncio.run(main(args.paths, not args.no_review, args.verbose, args.bound, args.per_100))))
