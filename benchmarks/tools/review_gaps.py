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
or keeps someone out whom it allows (``tight``). Usage::

    python -m benchmarks.tools.review_gaps benchmarks/scenarios/own [--no-review] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
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


def classify(gold: GoldFact, facts: Sequence[Fact], rulebook: Rulebook,
             people: Sequence[Recipient]) -> tuple[str, str]:
    want = audience(rulebook, people, gold.to_fact())
    carriers = pipeline.carriers(gold, facts)
    if not carriers:
        return "none", "" if not want else f"gold lets {sorted(want)} know"
    wrong = [(c, audience(rulebook, people, c)) for c in carriers]
    wrong = [(c, got) for c, got in wrong if got != want]
    if not wrong:
        return "right", ""
    settled = [c for c in carriers if c.state == "owner-set"]
    detail = "; ".join(f"{c.id}[{c.state},{c.category},L{c.effective_level()},s{stakes(c, rulebook.policy):.2f},"
                       f"{'loose' if got - want else 'tight'}] {c.text[:70]!r}" for c, got in wrong)
    if not settled:
        return "never-asked", detail
    if len(settled) < len(carriers):
        return "sibling", detail
    return "answered-wrong", detail


async def one(path: Path, review: bool, verbose: bool) -> Counter[str]:
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
            for g in scenario.facts:
                if g.id not in named:
                    continue
                kind, detail = classify(g, facts, rulebook, people)
                counts[kind] += 1
                if verbose and kind != "right":
                    print(f"  {path.name} {g.id} {kind}: gold {g.category} L{g.level} "
                          f"w{g.whitelist} b{g.blacklist}: {detail}")
        finally:
            await runtime.close()
    return counts


async def main(paths: list[Path], review: bool, verbose: bool) -> dict[str, int]:
    total: Counter[str] = Counter()
    for path in scenario_files(paths):
        total += await one(path, review, verbose)
    return dict(total)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--no-review", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.paths, not args.no_review, args.verbose))))
