"""The house-and-bonus example with platform identities, on a real runtime in a temp folder.

The shared example names nobody's Telegram or Slack account, so this adds fixed identities to
its policy: the owner Maya is ``telegram:777`` and ``slack:T1/UOWNER``, each contact a numeric
Telegram id and a Slack user in team ``T1``. One MiniLM embedder is shared by every runtime of
the test session (loading it is the slow part of opening a runtime).
"""

from __future__ import annotations

import functools
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from epmem.embedding.base import Embedder, Vectors
from epmem.policy.model import Policy
from epmem.scenario import Scenario, load_scenario

from bot.clock import Clock, utcnow
from bot.config import Settings
from bot.runtime import Runtime, embedder_from_settings, load_scenario_memory
from testkit.runtime import example

OWNER_TG = 777
TG = {"leo": 101, "grace": 102, "ana": 103, "ben": 104, "kim": 105, "raj": 106}
TEAM = "T1"
OWNER_SLACK = "UOWNER"
SLACK = {cid: f"U{cid.upper()}" for cid in TG}
OWNER_NAME = "Maya Chen"

HOUSE_Q = "How is the house hunt going?"
TRUTH = "Elm Road"
COVER = "more space"
#: a question the cover answers and the truth alone hardly does: once the owner allows the
#: truth to someone who had the cover, the same question must get the truth (a cover and its
#: truth are one event), not a deflection.
ROOM_Q = "Is Maya looking for somewhere with more room?"


class MemoEmbedder:
    """The real MiniLM embedder, remembering every text it embedded.

    Every test here opens runtimes over the same policy and facts, and a forward pass is the
    slow part of opening one; the vectors are MiniLM's own, computed once per text.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._memo: dict[str, Vectors] = {}

    def embed(self, texts: list[str]) -> Vectors:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            for text, row in zip(missing, self.inner.embed(missing), strict=True):
                self._memo[text] = row
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


@functools.cache
def shared_embedder() -> Embedder:
    return MemoEmbedder(embedder_from_settings())


@functools.cache
def house_scenario() -> Scenario:
    return load_scenario(example("house_and_bonus.yaml"))


@functools.cache
def house_policy() -> Policy:
    """The example's policy with every contact (and the owner) on Telegram and Slack."""
    data: dict[str, Any] = house_scenario().effective_policy().model_dump(mode="json")
    data["owner"]["identities"] = [f"telegram:{OWNER_TG}", f"slack:{TEAM}/{OWNER_SLACK}", "console:owner"]
    for cid, contact in data["contacts"].items():
        contact["identities"] = [f"telegram:{TG[cid]}", f"slack:{TEAM}/{SLACK[cid]}"]
    return Policy.model_validate(data)


def write_policy(path: Path) -> Path:
    """The policy as the owner's YAML file (what ``EPMEM_POLICY`` points at)."""
    path.write_text(yaml.safe_dump(house_policy().model_dump(mode="json"), sort_keys=False))
    return path


async def house_runtime(
    data_dir: Path,
    *,
    load: bool = True,
    policy_file: Path | None = None,
    policy: Policy | None = None,
    clock: Clock = utcnow,
    **settings: Any,
) -> Runtime:
    """A runtime over the house policy (or ``policy``, or the owner's ``policy_file``);
    ``load`` replaces the memory with the example's facts; ``settings`` are Settings fields."""
    s = Settings(data_dir=data_dir, policy=policy_file, **settings)
    if policy_file is None and policy is None:
        policy = house_policy()
    runtime = await Runtime.open(s, policy=policy, embedder=shared_embedder(), clock=clock)
    if load:
        await load_scenario_memory(runtime, house_scenario())
    return runtime


async def reopen(runtime: Runtime, clock: Clock = utcnow) -> Runtime:
    """Close and open again on the same folder: what a restart keeps."""
    await runtime.close()
    policy = None if runtime.settings.policy is not None else runtime.policies.base
    return await Runtime.open(runtime.settings, policy=policy, embedder=shared_embedder(), clock=clock)


def grace_chat_export(
    path: Path, chat: list[tuple[bool, str]], start: datetime, first_id: int, minutes: int = 2
) -> Path:
    """Maya's private chat with her sister as Telegram Desktop exports it (``result.json``):
    ``chat`` is (from Grace?, text) per message, ``minutes`` apart from ``start``."""
    messages: list[dict[str, Any]] = []
    for i, (grace, text) in enumerate(chat):
        when = start + timedelta(minutes=minutes * i)
        messages.append(
            {
                "id": first_id + i,
                "type": "message",
                "date": when.replace(tzinfo=None).isoformat(),
                "date_unixtime": str(int(when.timestamp())),
                "from": "Grace Chen" if grace else "Maya Chen",
                "from_id": f"user{TG['grace'] if grace else OWNER_TG}",
                "text": text,
                "text_entities": [{"type": "plain", "text": text}],
            }
        )
    path.write_text(
        json.dumps({"name": "Grace Chen", "type": "personal_chat", "id": TG["grace"], "messages": messages}, indent=1)
    )
    return path
