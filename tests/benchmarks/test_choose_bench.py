"""The scenario benchmark with the model choosing the facts (``--backend choose:RULE``): the
loopback model chooses by a stated rule, the rules relevance step stands when it cannot be used,
and nothing a reader may not know reaches a prompt or a reply. In process, real parts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.backends import known_backend, model_chooses
from benchmarks.choice_tally import breaks_composite, denied_in_prompts
from benchmarks.scenario_bench import run_scenarios
from epmem.embedding.minilm import default_embedder
from epmem.scenario import load_scenario
from testkit.runtime import example, scenario_runtime

FILES = [example("house_and_bonus.yaml")]


def test_the_choose_backends() -> None:
    assert all(known_backend(f"choose:{rule}") for rule in ("all", "first", "none", "invent"))
    assert not known_backend("choose:best") and not known_backend("choose:")
    assert model_chooses("choose:first") and not model_chooses("echo") and not model_chooses("rules")


def safe(metrics: dict[str, Any]) -> None:
    assert metrics["answer"]["leak_rate"] == 0.0 and metrics["answer"]["any_fact_leaks"] == 0
    assert metrics["chooser"]["composite_violations"] == 0 and metrics["chooser"]["prompt_leaks"] == 0
    assert metrics["llm"]["model_output_leaks"] == 0 and metrics["llm"]["insane_replies"] == 0
    assert metrics["llm"]["budget_violations"] == 0


async def test_a_model_that_chooses_everything_it_is_offered() -> None:
    metrics, _ = await run_scenarios(FILES, default_embedder(), "gold", backend="choose:all")
    safe(metrics)
    chooser, llm = metrics["chooser"], metrics["llm"]
    assert chooser["replies"] == metrics["answer"]["n"] and chooser["asked"] > 0
    assert chooser["model_used"] == chooser["asked"] and chooser["fell_back"] == 0
    assert chooser["held_back_by_composite"] > 0  # it chose what may not be told together
    assert metrics["llm"]["calls"] == llm["reply_calls"] + chooser["asked"]  # one choose call each


async def test_a_model_that_invents_ids_leaves_the_rules_choice() -> None:
    """Every choice falls back: the replies are the rules step's, as with the echo model alone."""
    chosen, _ = await run_scenarios(FILES, default_embedder(), "gold", backend="choose:invent")
    alone, _ = await run_scenarios(FILES, default_embedder(), "gold", backend="echo")
    safe(chosen)
    assert "chooser" in alone and alone["chooser"]["replies"] == 0  # the echo model does not choose
    chooser = chosen["chooser"]
    assert chooser["model_used"] == 0 and chooser["fallbacks"].get("unknown id") == chooser["asked"] > 0
    assert chosen["answer"] == alone["answer"] and chosen["permit"] == alone["permit"]


@pytest.mark.parametrize(
    ("prompt", "question", "shown"),
    [
        ("... Maya received a retention bonus. ...", "How is the house hunt going?", ["f3"]),
        ("... Maya received a retention bonus. ...", "Did Maya get a retention bonus?", []),  # the asker's words
        ("... Maya is training for the Bath half marathon in June. ...", "How is the house hunt going?", []),
    ],
)
def test_a_denied_fact_in_a_prompt_is_counted(prompt: str, question: str, shown: list[str]) -> None:
    """Raj (a neighbour, level 4) may not know the bonus (f3); the half marathon is public."""
    scenario = load_scenario(FILES[0])
    allowed = {"f2", "f6"}
    assert denied_in_prompts(scenario, [prompt], question, lambda fid: fid in allowed) == shown


async def test_a_reply_that_breaks_the_composite_rule_is_counted(tmp_path: Path) -> None:
    """Leo may know the house (f1) and the bonus (f3), not both; Ben may know neither with f1."""
    runtime, _ = await scenario_runtime(tmp_path / "data", FILES[0])
    try:
        assert await breaks_composite(runtime, {"disclosed": ["f1", "f3"]}, ["leo"]) == ["leo"]
        assert await breaks_composite(runtime, {"disclosed": ["f1"]}, ["leo", "ana"]) == []
        assert await breaks_composite(runtime, {"disclosed": ["f3", "f4"]}, ["ben", "leo"]) == []
        assert await breaks_composite(runtime, {"disclosed": ["f1"]}, ["leo", "stranger"]) == ["stranger"]
    finally:
        await runtime.close()
