"""The quick start's data (policies/example.yaml and policies/example-facts.yaml) on a real runtime,
with platform identities for the owner Sam and for Priya, so the console, Telegram and Slack
tests can ask as a new user would after ``epmem facts import policies/example-facts.yaml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from epmem.policy import load_policy
from epmem.policy.model import Policy

from bot.config import Settings
from bot.facts_file import read_facts_file
from bot.runtime import Runtime
from testkit.house import shared_embedder
from testkit.runtime import REPO

OWNER_TG, PRIYA_TG = 900, 901
TEAM, OWNER_SLACK, PRIYA_SLACK = "T1", "USAM", "UPRIYA"
#: the issue's question: knee surgery (life, whitelisted to Priya) and a release date (work).
KNEE_AND_LAUNCH_Q = "Is Sam having knee surgery, and when is the mobile app launch?"
#: one question about both (two questions are two answers, each its own composite)
KNEE_AND_LAUNCH_ONE_Q = "Any news on Sam's knee surgery and the mobile app launch?"
KNEE, LAUNCH = "knee surgery", "28 February"


def quickstart_policy() -> Policy:
    data: dict[str, Any] = load_policy(REPO / "policies" / "example.yaml").model_dump(mode="json")
    data["owner"]["identities"] = ["console:owner", f"telegram:{OWNER_TG}", f"slack:{TEAM}/{OWNER_SLACK}"]
    data["contacts"]["priya"]["identities"] = [f"telegram:{PRIYA_TG}", f"slack:{TEAM}/{PRIYA_SLACK}"]
    return Policy.model_validate(data)


async def quickstart_runtime(data_dir: Path, **settings: Any) -> Runtime:
    """A runtime holding the quick start's facts, as ``epmem facts import`` leaves it."""
    policy = quickstart_policy()
    runtime = await Runtime.open(Settings(data_dir=data_dir, **settings), policy=policy, embedder=shared_embedder())
    await runtime.memory.replace_all(read_facts_file(REPO / "policies" / "example-facts.yaml", policy))
    return runtime
