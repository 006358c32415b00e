"""The scenario benchmark's pipeline mode and its LLM budget accounting, in process."""

from __future__ import annotations

from benchmarks.scenario_bench import run_scenarios
from epmem.embedding.minilm import default_embedder
from testkit.runtime import example

FILES = [example("quitting_job.yaml"), example("house_and_bonus.yaml")]


async def test_pipeline_with_the_rules_backend_leaks_nothing() -> None:
    metrics, per = await run_scenarios(FILES, default_embedder(), "pipeline", backend="rules")
    assert metrics["answer"]["leak_rate"] == 0.0 and metrics["permit"]["safe"] == 1.0
    assert metrics["classify"]["n"] == 5 and metrics["llm"]["calls"] == 0
    # what someone else told the owner waits for the owner (contextual integrity)
    assert metrics["llm"]["sessions"] >= 2 and metrics["llm"]["pending_facts"] > 0
    assert metrics["llm"]["budget_violations"] == 0
    assert "review" not in metrics


async def test_the_oracle_owner_answers_what_the_delegate_asks() -> None:
    before, _ = await run_scenarios(FILES, default_embedder(), "pipeline", backend="rules")
    after, _ = await run_scenarios(FILES, default_embedder(), "pipeline", backend="rules", review=True)
    review = after["review"]
    # the delegate's own budget: the pending facts and a few confirmations, within the owner's patience
    assert review["facts"] == 8 and 0 < review["questions"] and review["per_100_facts"] <= 30
    assert review["per_100_facts"] == round(100 * review["questions"] / 8, 2)
    assert after["permit"]["exact"] > before["permit"]["exact"]
    assert after["answer"]["leak_rate"] == 0.0


async def test_pipeline_with_the_echo_model_keeps_everything_pending() -> None:
    """The echo model's extraction is not JSON: every fact stays pending, nobody hears any."""
    metrics, _ = await run_scenarios(FILES[:1], default_embedder(), "pipeline", backend="echo")
    llm = metrics["llm"]
    assert llm["ingest_calls"] == llm["sessions"] == 1 and llm["pending_facts"] > 0
    assert llm["reply_calls"] == 0 and llm["deflections"] == metrics["answer"]["n"]
    assert metrics["answer"]["leak_rate"] == 0.0 and llm["budget_violations"] == 0


async def test_gold_mode_with_the_echo_model_spends_one_call_per_answer() -> None:
    metrics, _ = await run_scenarios(FILES[1:], default_embedder(), "gold", backend="echo")
    llm = metrics["llm"]
    assert metrics["answer"]["leak_rate"] == 0.0 and metrics["permit"]["exact"] == 1.0
    assert llm["reply_calls"] == llm["replies"] == llm["calls"] > 0 and llm["budget_violations"] == 0
    assert llm["prompt_tokens"] > 0
