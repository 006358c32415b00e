"""Scenario benchmark (shared/bench/SCENARIOS.md): classify, permit and answer, scored.

Each scenario runs in its own temporary data folder through the real agent: the same store,
calculus, projection, responder and audit that serve chats. Nothing is special-cased per
scenario; ids in the file are only used to build identities (``console:<contact id>``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.base import Inbound
from epmem.annotate import classify
from epmem.calculus import STRANGER, Rulebook, allowed_set
from epmem.embedding.base import Embedder
from epmem.memory import RecallConfig
from epmem.policy import STRANGER_ID
from epmem.scenario import Scenario, asker_members, load_scenario

from bot.config import Settings
from bot.runtime import Runtime, load_scenario_memory


@dataclass
class Tally:
    classify_n: int = 0
    level_hits: int = 0
    category_hits: int = 0
    permit_n: int = 0
    exact: int = 0
    safe: int = 0
    cand_n: int = 0
    cand_hits: int = 0
    answer_n: int = 0
    leaks: int = 0
    may_total: int = 0
    may_hits: int = 0
    canary_hits: int = 0
    canary_in_may: int = 0
    diff_n: int = 0
    diff_hits: int = 0
    llm: dict[str, int] = field(default_factory=lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
    failures: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in self.__dataclass_fields__:
            if name == "llm":
                for k, v in other.llm.items():
                    self.llm[k] = self.llm.get(k, 0) + v
            elif name == "failures":
                self.failures.extend(other.failures)
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))

    def metrics(self) -> dict[str, Any]:
        def ratio(a: int, b: int, empty: float = 1.0) -> float:
            return round(a / b, 4) if b else empty

        return {
            "classify": {"n": self.classify_n, "level_accuracy": ratio(self.level_hits, self.classify_n, 0.0),
                         "category_accuracy": ratio(self.category_hits, self.classify_n, 0.0)},
            "permit": {"n": self.permit_n, "exact": ratio(self.exact, self.permit_n, 0.0),
                       "safe": ratio(self.safe, self.permit_n, 0.0),
                       "candidate_accuracy": ratio(self.cand_hits, self.cand_n, 0.0)},
            "answer": {"n": self.answer_n, "leak_rate": ratio(self.leaks, self.answer_n, 0.0),
                       "completeness": ratio(self.may_hits, self.may_total),
                       "precision": ratio(self.canary_in_may, self.canary_hits),
                       "differentiation": ratio(self.diff_hits, self.diff_n)},
            "llm": dict(self.llm),
        }


def _contains(reply: str, canary: str) -> bool:
    return canary.casefold() in reply.casefold()


def score_classify(scenario: Scenario, tally: Tally) -> None:
    policy = scenario.effective_policy()
    for item in scenario.tasks.classify:
        gold = scenario.fact(item.fact)
        ann = classify(gold.text, policy)
        tally.classify_n += 1
        tally.level_hits += ann.level == gold.level
        tally.category_hits += ann.category == gold.category


def score_permit(scenario: Scenario, tally: Tally) -> None:
    rulebook = Rulebook(scenario.effective_policy())
    for i, item in enumerate(scenario.tasks.permit):
        gates = [rulebook.gate(scenario.fact(f).to_fact()) for f in item.facts]
        recipients = [STRANGER if c == STRANGER_ID else rulebook.recipient(c) for c in item.candidates]
        predicted = allowed_set(gates, recipients)
        gold = frozenset(item.allowed)
        tally.permit_n += 1
        tally.exact += predicted == gold
        tally.safe += predicted <= gold
        for c in item.candidates:
            tally.cand_n += 1
            tally.cand_hits += (c in predicted) == (c in gold)
        if predicted != gold:
            tally.failures.append(f"{scenario.name}: permit[{i}] {item.facts}: got {sorted(predicted)}, "
                                  f"gold {sorted(gold)}")


async def score_answers(scenario: Scenario, runtime: Runtime, tally: Tally) -> None:
    canaries = {f.id: f.canary for f in scenario.facts}
    agent = runtime.agent
    for qi, item in enumerate(scenario.tasks.answer):
        replies: dict[str, tuple[frozenset[str], str]] = {}
        for asker, gold in item.askers.items():
            members = asker_members(asker)
            identities = tuple(agent.directory.contact_identity(m) for m in members)
            inbound = Inbound(
                platform="console", chat_id=f"bench-{qi}-{asker}",
                chat_kind="direct" if len(members) == 1 else "group",
                sender=identities[0], text=item.question, audience=identities,
            )
            reply = (await agent.handle(inbound)).text or ""
            replies[asker] = (frozenset(gold.may), reply)
            tally.answer_n += 1
            leaked = [f for f in gold.must_not if _contains(reply, canaries[f])]
            if leaked:
                tally.leaks += 1
                tally.failures.append(f"{scenario.name}: LEAK q{qi} {asker}: {leaked} in {reply!r}")
            tally.may_total += len(gold.may)
            found = [f for f in gold.may if _contains(reply, canaries[f])]
            tally.may_hits += len(found)
            if len(found) < len(gold.may):
                tally.failures.append(f"{scenario.name}: incomplete q{qi} {asker}: missing "
                                      f"{sorted(set(gold.may) - set(found))} in {reply!r}")
            present = [fid for fid, c in canaries.items() if _contains(reply, c)]
            tally.canary_hits += len(present)
            tally.canary_in_may += sum(1 for fid in present if fid in gold.may)
            extra = [fid for fid in present if fid not in gold.may]
            if extra:
                tally.failures.append(f"{scenario.name}: imprecise q{qi} {asker}: also said {extra}")
        groups = {may for may, _ in replies.values()}
        if len(groups) > 1:
            tally.diff_n += 1
            pairs = [(a, b) for a in replies.values() for b in replies.values() if a[0] != b[0]]
            tally.diff_hits += all(a[1] != b[1] for a, b in pairs)


async def run_scenario(scenario: Scenario, embedder: Embedder, mode: str = "gold",
                       recall: RecallConfig | None = None) -> Tally:
    if mode != "gold":
        raise ValueError(f"unknown mode {mode!r}")
    tally = Tally()
    score_classify(scenario, tally)
    score_permit(scenario, tally)
    with tempfile.TemporaryDirectory(prefix="epmem-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        runtime = await Runtime.open(settings, policy=scenario.effective_policy(), embedder=embedder, recall=recall)
        try:
            await load_scenario_memory(runtime, scenario)
            await score_answers(scenario, runtime, tally)
        finally:
            await runtime.close()
    return tally


async def run_scenarios(paths: Sequence[Path], embedder: Embedder, mode: str = "gold",
                        recall: RecallConfig | None = None) -> tuple[dict[str, Any], dict[str, Tally]]:
    total = Tally()
    per: dict[str, Tally] = {}
    for path in paths:
        scenario = load_scenario(path)
        tally = await run_scenario(scenario, embedder, mode, recall)
        per[str(path)] = tally
        total.add(tally)
    return total.metrics(), per
