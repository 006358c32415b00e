"""Verdicts per second for the disclosure calculus (single facts and 3-fact composites).

A synthetic 50-contact policy with groups, whitelists and blacklists; gates are compiled once
(as the engine does per query) and the timed loop calls only the verdict functions. Medians
of several rounds are reported because these machines are noisy.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import time
from typing import Any

from epmem.policy.calculus import Composite, Gate, Recipient, Rulebook, judge
from epmem.memory.facts import Fact
from epmem.policy.model import Category, Contact, Policy


def synthetic_policy(n_contacts: int = 50, seed: int = 7) -> Policy:
    rng = random.Random(seed)
    contacts = {
        f"c{i}": Contact(name=f"Contact {i}", level=rng.randint(1, 4), domain=rng.choice(["work", "life", None]))
        for i in range(n_contacts)
    }
    ids = list(contacts)
    groups = {f"g{j}": rng.sample(ids, 6) for j in range(8)}
    categories = {f"cat{k}": Category(level=k % 5, domain=rng.choice(["work", "life", None])) for k in range(10)}
    categories["credentials"] = Category(level=0, never_share=True)
    return Policy(contacts=contacts, groups=groups, categories=categories, default_category="cat4")


def synthetic_facts(policy: Policy, n: int = 200, seed: int = 11) -> list[Fact]:
    rng = random.Random(seed)
    lists = list(policy.contacts) + list(policy.groups)
    cats = list(policy.categories)
    facts = []
    for i in range(n):
        cat = rng.choice(cats)
        facts.append(
            Fact(
                id=f"f{i}",
                text=f"fact {i}",
                event_id=f"e{i // 2}",
                category=cat,
                level=policy.categories[cat].level,
                domain=policy.categories[cat].domain,
                state="annotated",
                whitelist=rng.sample(lists, rng.randint(0, 3)),
                blacklist=rng.sample(lists, rng.randint(0, 2)),
            )
        )
    return facts


def _rate(fn: Any, work: list[Any], recipients: list[Recipient], seconds: float) -> float:
    done = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        for item in work:
            for r in recipients:
                fn(item, r)
        done += len(work) * len(recipients)
    return done / (time.perf_counter() - started)


def _pin_to_one_core() -> int | None:
    """The target is per core: keep the measurement on one CPU where the OS allows it."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def run_calculus_bench(seconds: float = 1.0, rounds: int = 5) -> dict[str, Any]:
    cpu = _pin_to_one_core()
    policy = synthetic_policy()
    rulebook = Rulebook(policy)
    gates: list[Gate] = [rulebook.gate(f) for f in synthetic_facts(policy)]
    recipients = [rulebook.recipient(c) for c in policy.contacts]
    rng = random.Random(3)
    triples = [Composite.of(rng.sample(gates, 3)) for _ in range(100)]
    singles = [_rate(judge, gates, recipients, seconds / rounds) for _ in range(rounds)]
    composites = [_rate(Composite.allows, triples, recipients, seconds / rounds) for _ in range(rounds)]
    single = statistics.median(singles)
    composite = statistics.median(composites)
    return {
        "contacts": len(recipients),
        "facts": len(gates),
        "rounds": rounds,
        "single_verdicts_per_s": round(single),
        "composite3_verdicts_per_s": round(composite),
        "composite3_fact_checks_per_s": round(composite * 3),
        "single_rounds": [round(x) for x in singles],
        "composite3_rounds": [round(x) for x in composites],
        "pinned_cpu": cpu,
        "python": platform.python_version(),
    }
