"""Scenario benchmark (shared/bench/SCENARIOS.md): classify, permit and answer, scored.

Each scenario runs in its own temporary data folder through the real agent: the same store,
calculus, projection, responder and audit that serve chats. Nothing is special-cased per
scenario; ids in the file are only used to build identities (``console:<contact id>``).

Modes: ``gold`` loads the gold facts as memory; ``pipeline`` ingests only the sessions and lets
the backend extract and annotate them (benchmarks/pipeline.py). Backends: ``rules`` (offline),
``echo`` (the real openai client against a loopback model that repeats its prompt: what it
answered is checked for must_not canaries, ``model_output_leaks``), ``misbehave:KIND`` (a broken
model, testkit/fake_openai.py), ``choose:RULE`` (the echo model, choosing the facts by a stated
rule: benchmarks/backends.py) or ``openai`` (the configured endpoint). Every sent reply must
pass the sanity rules (``insane_replies``); who chose each reply's facts, the composite rule
over what each reply told, and the denied facts in any prompt are counted in ``chooser``
(benchmarks/choice_tally.py). The ``llm`` keys count calls and tokens and check the budgets: at
most one call per ingested session, exactly one per reply that has something to say.

The parts: :mod:`benchmarks.scenario_tally` (what a run counts, the metrics),
:mod:`benchmarks.scenario_answers` (the answer task); classify and permit, and running a
scenario in each mode, are here.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from epmem.embedding.base import Embedder
from epmem.ingest.annotate import CategoryClassifier
from epmem.llm.base import LLM
from epmem.memory.facts import Fact
from epmem.memory.recall import RecallConfig
from epmem.policy.calculus import STRANGER, Rulebook, allowed_set
from epmem.policy.model import STRANGER_ID
from epmem.scenario import Scenario, load_scenario

from benchmarks import heard, pipeline, review_oracle
from benchmarks.backends import bench_llm, model_chooses
from benchmarks.consult_oracle import ConsultOracle
from benchmarks.scenario_answers import is_injection, score_answers
from benchmarks.scenario_tally import Tally
from bot import consulting
from bot.config import Settings
from bot.runtime import Runtime, load_scenario_memory

__all__ = ["MODES", "Tally", "is_injection", "run_scenario", "run_scenarios", "score_answers"]


def score_classify(scenario: Scenario, tally: Tally, classifier: CategoryClassifier) -> None:
    """Gold mode: the rules classifier on the gold fact's own text."""
    for item in scenario.tasks.classify:
        gold = scenario.fact(item.fact)
        ann = classifier.classify(gold.text)
        tally.classify_n += 1
        tally.level_hits += ann.level == gold.level
        tally.category_hits += ann.category == gold.category


def score_classify_pipeline(scenario: Scenario, facts: Sequence[Fact], tally: Tally) -> None:
    """Pipeline mode: the backend's own annotation of the fact standing for the gold fact."""
    for item in scenario.tasks.classify:
        gold = scenario.fact(item.fact)
        match = pipeline.best_match(gold, facts)
        tally.classify_n += 1
        if match is None:
            tally.failures.append(f"{scenario.name}: classify {gold.id}: nothing extracted")
            continue
        tally.level_hits += match.effective_level() == gold.level
        tally.category_hits += match.category == gold.category
        if match.effective_level() != gold.level:
            tally.failures.append(
                f"{scenario.name}: classify {gold.id}: L{match.effective_level()} "
                f"{match.category} ({match.id}: {match.text!r}), gold L{gold.level} {gold.category}"
            )


def score_permit(scenario: Scenario, tally: Tally, facts: Sequence[Fact] | None = None) -> None:
    """Gold mode judges the gold annotations; pipeline mode (``facts`` given) the extracted ones."""
    rulebook = Rulebook(scenario.effective_policy())
    for i, item in enumerate(scenario.tasks.permit):
        if facts is None:
            gates = [rulebook.gate(scenario.fact(f).to_fact()) for f in item.facts]
            recipients = [STRANGER if c == STRANGER_ID else rulebook.recipient(c) for c in item.candidates]
            predicted = allowed_set(gates, recipients)
        else:
            predicted = pipeline.task_allowed(rulebook, scenario, item.facts, item.candidates, facts)
        gold = frozenset(item.allowed)
        tally.permit_n += 1
        tally.exact += predicted == gold
        tally.safe += predicted <= gold
        for c in item.candidates:
            tally.cand_n += 1
            tally.cand_hits += (c in predicted) == (c in gold)
        if predicted != gold:
            tally.failures.append(
                f"{scenario.name}: permit[{i}] {item.facts}: got {sorted(predicted)}, gold {sorted(gold)}"
            )


MODES = ("gold", "pipeline")


async def run_scenario(
    scenario: Scenario,
    embedder: Embedder,
    mode: str = "gold",
    recall: RecallConfig | None = None,
    llm: LLM | None = None,
    source: str = "",
    review: bool = False,
    replies: list[dict[str, Any]] | None = None,
    consult: bool = False,
    chooses: bool = False,
) -> Tally:
    """``review``: pipeline mode only; an oracle owner answers the delegate's review questions
    from the gold annotations (benchmarks/review_oracle.py) before the tasks are scored.
    ``consult``: pipeline mode only; the oracle owner answers each consultation as it comes
    (:class:`ConsultOracle`). ``replies``, when given, receives one line per (scenario,
    question, asker) and per follow-up. ``chooses``: ``llm`` chooses the facts too."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use gold or pipeline")
    if (review or consult) and mode != "pipeline":
        raise ValueError("--review and --consult need --mode pipeline")
    tally = Tally()
    before = llm.usage.as_dict() if llm is not None else {}
    with tempfile.TemporaryDirectory(prefix="epmem-bench-") as tmp:
        # one attempt per session: a retry would be a second call for the same session
        settings = Settings(
            data_dir=Path(tmp),
            llm_backend="openai" if llm is not None else "rules",
            annotate_attempts=1,
            model_chooses=chooses,
        )
        runtime = await Runtime.open(
            settings, policy=scenario.effective_policy(), embedder=embedder, recall=recall, llm=llm
        )
        facts: list[Fact] | None = None
        try:
            if mode == "gold":
                score_classify(scenario, tally, CategoryClassifier(runtime.policy, embedder))
                score_permit(scenario, tally)
                await load_scenario_memory(runtime, scenario)
            else:
                facts = await _ingest_and_score(runtime, scenario, tally, source, review)
            await score_answers(
                scenario, runtime, tally, replies, facts, ConsultOracle(runtime, scenario) if consult else None
            )
            if consult:
                tally.consult_learned = await _learned_events(runtime)
        finally:
            await runtime.close()
    if llm is not None:
        after = llm.usage.as_dict()
        tally.llm = {k: after[k] - before.get(k, 0) for k in after}
    return tally


async def _ingest_and_score(
    runtime: Runtime, scenario: Scenario, tally: Tally, source: str, review: bool
) -> list[Fact]:
    """Pipeline mode: ingest the sessions (and let the oracle owner review), then score
    classify and permit on what was extracted; the facts in memory."""
    ingested = await pipeline.ingest(runtime, scenario, source or scenario.name)
    tally.sessions, tally.ingest_calls, tally.pending_facts = (
        ingested.sessions,
        ingested.llm_calls,
        ingested.pending,
    )
    if ingested.llm_calls > ingested.sessions:
        tally.budget_violations += 1
        tally.failures.append(
            f"{scenario.name}: {ingested.llm_calls} extraction calls for {ingested.sessions} sessions"
        )
    if review:
        assert runtime.review is not None
        asked = await review_oracle.run_review(runtime.review, scenario, await runtime.review.budget())
        tally.review_questions, tally.review_rounds, tally.review_learned = (
            asked.questions,
            asked.rounds,
            asked.learned,
        )
        tally.gold_facts = len(scenario.facts)
    tally.heard_may, tally.heard_may_total = heard.heard_ceiling(scenario)
    facts = await runtime.memory.all()
    score_classify_pipeline(scenario, facts, tally)
    score_permit(scenario, tally, facts)
    return facts


async def _learned_events(runtime: Runtime) -> int:
    """Events opened without asking, like the owner's earlier answers (``--consult``)."""
    return len({f.event_id for f in await runtime.memory.all() if f"owner:consult:{consulting.LEARNED}" in f.evidence})


async def run_scenarios(
    paths: Sequence[Path],
    embedder: Embedder,
    mode: str = "gold",
    recall: RecallConfig | None = None,
    backend: str = "rules",
    review: bool = False,
    replies: list[dict[str, Any]] | None = None,
    consult: bool = False,
) -> tuple[dict[str, Any], dict[str, Tally]]:
    """``replies``, when given, receives one line per (scenario, question, asker)."""
    total = Tally()
    per: dict[str, Tally] = {}
    async with bench_llm(backend) as llm:
        for path in paths:
            scenario = load_scenario(path)
            tally = await run_scenario(
                scenario, embedder, mode, recall, llm, str(path), review, replies, consult, model_chooses(backend)
            )
            per[str(path)] = tally
            total.add(tally)
    return total.metrics(review, consult), per
