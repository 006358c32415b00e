"""Wiring: settings in, a ready agent out. The one place that knows every concrete part."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from epmem.audit import AuditLog
from epmem.embedding.base import Embedder
from epmem.engine import PrivacyEngine
from epmem.memory import FactMemory, RecallConfig, SubjectNormalizer, category_profiles
from epmem.overlay import Overlay
from epmem.policy import Policy, load_policy
from epmem.respond import Responder, RulesResponder
from epmem.scenario import Scenario
from epmem.store.edge import EdgeStore

from bot.agent import DelegateAgent
from bot.config import ACTIVE_POLICY_NAME, Settings


def make_embedder() -> Embedder:
    from epmem.embedding.minilm import default_embedder

    return default_embedder()


def make_responder(settings: Settings) -> Responder:
    if settings.llm_backend == "rules":
        return RulesResponder()
    raise NotImplementedError(f"LLM backend {settings.llm_backend!r} is not available yet; use rules")


def owner_names(policy: Policy) -> list[str]:
    return [policy.owner.name]


@dataclass
class Runtime:
    settings: Settings
    policy: Policy
    store: EdgeStore
    memory: FactMemory
    overlay: Overlay
    audit: AuditLog
    engine: PrivacyEngine
    agent: DelegateAgent

    @classmethod
    async def open(cls, settings: Settings, policy: Policy | None = None, embedder: Embedder | None = None,
                   recall: RecallConfig | None = None) -> Runtime:
        policy = policy or load_policy(settings.policy_path())
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        audit = await AuditLog(settings.audit_db).open()
        store: EdgeStore | None = None
        overlay: Overlay | None = None
        try:
            overlay = await Overlay(settings.state_db).open()
            store = EdgeStore(settings.qdrant_dir, settings.owner_id)
            memory = await FactMemory(store, embedder or make_embedder(), SubjectNormalizer(owner_names(policy)),
                                      recall, category_profiles(dict(policy.categories))).open()
        except BaseException:
            await audit.close()
            if overlay is not None:
                await overlay.close()
            if store is not None:
                await store.close()
            raise
        engine = PrivacyEngine(policy, overlay, memory, make_responder(settings))
        agent = DelegateAgent(engine, audit, settings.max_message_chars)
        return cls(settings, policy, store, memory, overlay, audit, engine, agent)

    async def close(self) -> None:
        await self.store.close()
        await self.overlay.close()
        await self.audit.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def activate_policy(settings: Settings, scenario: Scenario, source: Path) -> Path:
    """Write the scenario's policy as the data folder's active policy (atomically)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    target = settings.data_dir / ACTIVE_POLICY_NAME
    tmp = target.with_suffix(".tmp")
    body = scenario.effective_policy().model_dump(mode="json", exclude_defaults=False)
    tmp.write_text(f"# active policy, loaded from {source}\n" + yaml.safe_dump(body, sort_keys=False))
    shutil.move(str(tmp), target)
    return target


async def load_scenario_memory(runtime: Runtime, scenario: Scenario) -> int:
    """Replace the memory with the scenario's gold facts."""
    facts = [f.to_fact() for f in scenario.facts]
    await runtime.memory.replace_all(facts)
    return len(facts)
