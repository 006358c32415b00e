"""Where a pipeline run with no owner loses what an asker heard said (benchmarks/tools/heard_gaps.py)."""

from __future__ import annotations

from collections import Counter

from epmem.embedding.minilm import default_embedder
from epmem.scenario import load_scenario

from benchmarks.tools.heard_gaps import CLASSES, bounds, main
from testkit.runtime import OWN_SCENARIOS

FILE = OWN_SCENARIOS / "team_reorg.yaml"


def test_the_bounds_add_what_each_step_loses_to_what_is_told() -> None:
    classes = Counter({"told": 3, "not-chosen": 2, "held-back": 1, "not-recalled": 4, "not-heard": 5, "no-carrier": 1})
    b = bounds(40, 6, classes)
    assert b == {"told": 0.15, "choice": 0.225, "recall_and_choice": 0.325, "heard_ceiling": 0.4}
    assert bounds(0, 0, Counter()) == {}


async def test_every_heard_may_fact_is_classed_once_and_the_bounds_are_ordered() -> None:
    scenario = load_scenario(FILE)
    may = sum(len(g.may) for item in scenario.tasks.answer for g in item.askers.values())
    run = await main([FILE], embedder=default_embedder())
    assert run["may"] == may
    assert set(run["classes"]) <= set(CLASSES) and sum(run["classes"].values()) == run["heard_may"] > 0
    by_class = Counter(c for p in run["pairs"] for c in p["heard"].values())
    assert dict(by_class) == run["classes"]
    b = run["bounds"]
    # told counts every may fact told, heard or not; what was heard and told is part of it
    assert run["classes"].get("told", 0) / may <= b["told"] <= b["choice"] <= b["recall_and_choice"] <= 1.0
    assert b["heard_ceiling"] == round(run["heard_may"] / may, 4)
    lost = run["classes"].get("not-chosen", 0) + run["classes"].get("held-back", 0)
    assert abs(b["choice"] - b["told"] - lost / may) < 1e-3
