"""Helpers that build a real runtime (Edge store, SQLite files, MiniLM) in a temp folder."""

from __future__ import annotations

from pathlib import Path

from connectors.base import Inbound
from epmem.scenario import Scenario, load_scenario

from bot.config import Settings
from bot.runtime import Runtime, load_scenario_memory

REPO = Path(__file__).resolve().parents[1]
SHARED_EXAMPLES = REPO.parent / "shared" / "bench" / "examples"
OWN_SCENARIOS = REPO / "benchmarks" / "scenarios" / "own"


def example(name: str) -> Path:
    """A shared example if this checkout sits beside shared/, else our copy of it."""
    shared = SHARED_EXAMPLES / name
    return shared if shared.exists() else REPO / "tests" / "fixtures" / "scenarios" / name


async def scenario_runtime(data_dir: Path, scenario_path: Path) -> tuple[Runtime, Scenario]:
    return await open_scenario(Settings(data_dir=data_dir), scenario_path)


async def open_scenario(settings: Settings, scenario_path: Path) -> tuple[Runtime, Scenario]:
    """A runtime on ``settings`` with the scenario's policy and gold memory loaded."""
    scenario = load_scenario(scenario_path)
    runtime = await Runtime.open(settings, policy=scenario.effective_policy())
    await load_scenario_memory(runtime, scenario)
    return runtime, scenario


def model_settings(
    data_dir: Path, base_url: str, *, timeout_s: float, budget_s: float, chooses: bool = False
) -> Settings:
    """Settings that answer through a loopback OpenAI-compatible model with no retries, so a
    misbehaving model shows in the first reply instead of hiding behind a second try.
    ``chooses``: the model also chooses the facts (EPMEM_MODEL_CHOOSES, on by default in a
    deployment; off here, so that a test of the reply sees the reply call alone)."""
    return Settings(
        data_dir=data_dir,
        llm_backend="openai",
        openai_base_url=base_url,
        llm_model="fake-model",
        llm_timeout_s=timeout_s,
        llm_max_retries=0,
        llm_reply_budget_s=budget_s,
        llm_choose_budget_s=budget_s,
        model_chooses=chooses,
        annotate_attempts=1,
    )


def ask(sender: str, text: str, *others: str, platform: str = "console") -> Inbound:
    """A message from ``console:<sender>``; extra contact ids make it a group chat."""
    identity = sender if ":" in sender else f"console:{sender}"
    audience = (identity, *(o if ":" in o else f"console:{o}" for o in others))
    return Inbound(
        platform=platform,
        chat_id="chat-" + "-".join(audience),
        chat_kind="group" if others else "direct",
        sender=identity,
        text=text,
        audience=audience,
    )
