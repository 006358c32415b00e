"""Pipeline mode of the scenario benchmark (shared/bench/SCENARIOS.md): no gold facts in memory.

Only the sessions go in, through the same path a chat export takes: the scenario's turns become
messages, epmem.memory.sessions cuts them into (sub-)sessions, and the distiller extracts and annotates
each session with the configured backend. The gold facts are then only used to score:

- classify: each gold fact is matched to the extracted facts of its source session (those that
  contain its canary, else the one sharing most content words); the prediction is that fact's
  effective level (a pending fact is level 0) and category;
- permit: a candidate may be told gold facts f1..fk when some choice of extracted facts carrying
  their canaries (any session: the same news told twice is the same news) passes the calculus
  together; a gold fact no extracted fact carries cannot be told, so nobody is allowed;
- answer: the real agent answers from the extracted memory; canaries are counted as in gold mode.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from epmem.policy.calculus import STRANGER, Composite, Rulebook
from epmem.memory.facts import Fact
from epmem.ingest.scenario_file import scenario_messages
from epmem.policy.model import STRANGER_ID
from epmem.scenario import GoldFact, Scenario
from epmem.memory.sessions import Session, build_sessions
from epmem.textnorm import content_words, words

from bot.runtime import Runtime

MAX_COMBINATIONS = 4096


@dataclass(frozen=True, slots=True)
class Ingested:
    sessions: int
    llm_calls: int
    pending: int


def scenario_sessions(scenario: Scenario, source: str) -> list[Session]:
    messages, ids = scenario_messages(scenario, source)
    sessions = build_sessions(messages, session_ids=ids)
    return sorted(sessions, key=lambda s: (s.start is None, s.start or 0, s.id))  # type: ignore[operator]


async def ingest(runtime: Runtime, scenario: Scenario, source: str) -> Ingested:
    """Every session of the scenario into memory, the same way `epmem ingest` does it: turns and
    sessions first, then each session through the distiller, annotation awaited."""
    distiller = runtime.distiller
    assert distiller is not None
    sessions = scenario_sessions(scenario, source)
    if runtime.conversations is not None:  # F0/F3, as `epmem ingest` writes them
        await runtime.conversations.add(sessions)
    calls = 0
    for session in sessions:
        outcome = await distiller.ingest(session, background=False)
        calls += outcome.llm_calls
    pending = sum(1 for f in await runtime.memory.all() if f.state == "pending")
    return Ingested(len(sessions), calls, pending)


def origin(fact: Fact) -> str | None:
    """The scenario session a fact came from (sub-session ids are ``<chat>~<counterpart>``)."""
    return fact.session_id.split("~", 1)[0] if fact.session_id else None


def carriers(gold: GoldFact, facts: Sequence[Fact]) -> list[Fact]:
    """Extracted facts that reveal a gold fact: its canary appears in them."""
    canary = gold.canary.casefold()
    return [f for f in facts if canary in f.text.casefold()]


def best_match(gold: GoldFact, facts: Sequence[Fact]) -> Fact | None:
    """The extracted fact standing for a gold fact's source: from its session, with its canary
    if any does, else sharing most content words with it."""
    own = [f for f in facts if gold.session is None or origin(f) == gold.session]
    with_canary = carriers(gold, own)
    if with_canary:
        return with_canary[0]
    target = set(content_words(words(gold.text)))
    scored = [(len(target & set(content_words(words(f.text)))), f.id, f) for f in own]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: (s[0], s[1]))[2] if scored else None


def task_allowed(
    rulebook: Rulebook, scenario: Scenario, facts: Sequence[str], candidates: Sequence[str], extracted: Sequence[Fact]
) -> frozenset[str]:
    """Who of ``candidates`` the extracted memory lets be told the gold ``facts`` together."""
    chosen = [carriers(scenario.fact(f), extracted) for f in facts]
    return frozenset(predicted_allowed(rulebook, chosen, candidates))


def predicted_allowed(rulebook: Rulebook, chosen: Sequence[Sequence[Fact]], candidates: Sequence[str]) -> set[str]:
    if any(not c for c in chosen):
        return set()
    recipients = [STRANGER if c == STRANGER_ID else rulebook.recipient(c) for c in candidates]
    allowed: set[str] = set()
    for n, combo in enumerate(itertools.product(*chosen)):
        if n >= MAX_COMBINATIONS:
            break
        comp = Composite.of([rulebook.gate(f) for f in combo])
        allowed |= {r.id for r in recipients if r.id not in allowed and comp.allows(r)}
    return allowed
