"""The scenario benchmark's pipeline mode and its LLM budget accounting, in process."""

from __future__ import annotations

from typing import Any

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


async def test_the_oracle_owner_answers_consultations_and_each_is_counted_by_what_it_showed() -> None:
    """``--consult``: follow-ups count in leak and completeness; every message to the owner is
    counted once, as useful, on the question, or neither (benchmarks/consult_oracle.py)."""
    plain, _ = await run_scenarios(FILES, default_embedder(), "pipeline", backend="rules")
    metrics, _ = await run_scenarios(FILES, default_embedder(), "pipeline", backend="rules", consult=True)
    consult, answer = metrics["consult"], metrics["answer"]
    assert answer["leak_rate"] == 0.0 and answer["any_fact_leaks"] == 0
    assert consult["questions"] == answer["n"] and consult["asked"] > 0 and consult["followups"] > 0
    assert 0 < consult["useful"] and consult["useful"] + consult["on_question"] <= consult["asked"]
    assert consult["events"] >= consult["asked"]  # a message may ask about several events
    assert answer["completeness"] > plain["answer"]["completeness"]


async def test_the_oracle_owner_writes_the_story_no_conversation_said_and_who_may_not_know_hears_it() -> None:
    """The house example's cover ("thinking about moving somewhere with more space") is said in no
    chat: the oracle owner writes it (``/story``) when a consultation shows the house offer, and
    Raj, who may not know the offer, hears the story; nobody hears it before."""
    replies: list[dict[str, Any]] = []
    metrics, _ = await run_scenarios(FILES[1:], default_embedder(), "pipeline", consult=True, replies=replies)
    assert metrics["consult"]["stories"] == 1
    assert metrics["answer"]["leak_rate"] == 0.0 and metrics["answer"]["any_fact_leaks"] == 0
    told = [(r["askers"], r["reply"]) for r in replies if "more space" in r["reply"]]
    assert told and all("leo" not in askers and "Elm Road" not in reply for askers, reply in told)
    assert any(askers == ["raj"] for askers, _ in told)
