"""Wiring: settings in, a ready agent out. The one place that knows every concrete part."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import yaml

from epmem.ingest.annotate import CategoryClassifier
from epmem.audit.log import AuditLog
from epmem.ingest.distill import Distiller, RetryPolicy
from epmem.ingest.examples import ExampleBank
from epmem.ingest.review import ReviewQueue
from epmem.embedding.base import Embedder
from epmem.reply.engine import PrivacyEngine
from epmem.memory.recall import FactMemory, RecallConfig, SubjectNormalizer
from epmem.policy.model import category_profiles
from epmem.policy.overlay import Overlay
from epmem.policy.model import Policy, load_policy
from epmem.llm.base import LLM
from epmem.reply.respond import LLMResponder, Responder, RulesResponder
from epmem.scenario import Scenario
from epmem.memory.conversations import Conversations
from epmem.memory.retrieval import RetrievalConfig, Retriever
from epmem.store.base import VectorStore
from epmem.store.open import open_store

from bot.abuse import AbuseGuard
from bot.agent import DelegateAgent
from bot.annotation_commands import AnnotationCommands
from bot.config import ACTIVE_POLICY_NAME, ConfigError, Settings


def embedder_from_settings(settings: Settings | None = None) -> Embedder:
    from epmem.embedding.select import make_embedder as select

    if settings is None:
        return select("minilm")
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return select(settings.embedder, settings.embedding_model, settings.openai_base_url, key)


def retrieval_config(settings: Settings) -> RetrievalConfig:
    try:
        return RetrievalConfig(alpha=settings.retrieval_alpha, beta=settings.retrieval_beta)
    except ValueError as exc:
        raise ConfigError(f"EPMEM_RETRIEVAL_ALPHA / EPMEM_RETRIEVAL_BETA: {exc}") from None


def make_store(settings: Settings) -> VectorStore:
    key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
    return open_store(settings.qdrant_dir, settings.owner_id, settings.qdrant_url, key)


def make_llm(settings: Settings) -> LLM | None:
    """The configured model, or None for the offline rules backend."""
    if settings.llm_backend == "rules":
        return None
    if not settings.llm_model:
        raise ConfigError("EPMEM_LLM_BACKEND=openai needs EPMEM_LLM_MODEL (and OPENAI_BASE_URL for a "
                          "server other than api.openai.com)")
    from epmem.llm.openai_backend import OpenAIConfig, OpenAILLM

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return OpenAILLM(OpenAIConfig(base_url=settings.openai_base_url, api_key=key, model=settings.llm_model,
                                  timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries,
                                  structured_output=settings.llm_structured_output))


def make_responder(settings: Settings, llm: LLM | None = None) -> Responder:
    if settings.llm_backend == "rules" and llm is None:
        return RulesResponder()
    model = llm or make_llm(settings)
    assert model is not None
    return LLMResponder(model, budget_s=settings.llm_reply_budget_s)


def make_distiller(settings: Settings, policy: Policy, memory: FactMemory, llm: LLM | None,
                   examples: ExampleBank | None = None) -> Distiller:
    classifier = CategoryClassifier(policy, memory.embedder, examples=examples)
    retry = RetryPolicy(attempts=settings.annotate_attempts, base_s=settings.annotate_backoff_s)
    return Distiller(policy, memory, classifier, llm, retry)


def owner_names(policy: Policy) -> list[str]:
    return [policy.owner.name]


@dataclass
class Runtime:
    settings: Settings
    policy: Policy
    store: VectorStore
    memory: FactMemory
    overlay: Overlay
    audit: AuditLog
    engine: PrivacyEngine
    agent: DelegateAgent
    #: the model of the openai backend (None: rules), and whether close() should close it.
    llm: LLM | None = None
    distiller: Distiller | None = None
    owns_llm: bool = True
    #: F0 turns and F3 sessions, and the session retrieval recall fuses in (epmem.memory.retrieval).
    conversations: Conversations | None = None
    retriever: Retriever | None = None
    #: the owner's review queue (epmem.ingest.review); its answers teach the distiller's classifier.
    review: ReviewQueue | None = None

    @classmethod
    async def open(cls, settings: Settings, policy: Policy | None = None, embedder: Embedder | None = None,
                   recall: RecallConfig | None = None, llm: LLM | None = None) -> Runtime:
        """``llm`` overrides the configured model (benchmarks); the caller then closes it."""
        policy = policy or load_policy(settings.policy_path())
        owns_llm = llm is None
        llm = llm if llm is not None else make_llm(settings)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        audit = await AuditLog(settings.audit_db).open()
        store: VectorStore | None = None
        overlay: Overlay | None = None
        try:
            overlay = await Overlay(settings.state_db).open()
            store = make_store(settings)
            embedder = embedder or embedder_from_settings(settings)
            memory = await FactMemory(store, embedder, SubjectNormalizer(owner_names(policy)),
                                      recall, category_profiles(policy.categories)).open()
            conversations = await Conversations(store, embedder).open()
            retriever = Retriever(store, embedder, conversations, retrieval_config(settings))
            memory.sessions = retriever
        except BaseException:
            await audit.close()
            if llm is not None and owns_llm:
                await llm.aclose()
            if overlay is not None:
                await overlay.close()
            if store is not None:
                await store.close()
            raise
        engine = PrivacyEngine(policy, overlay, memory, make_responder(settings, llm))
        examples = ExampleBank.from_facts(await memory.all(), memory.embedder)
        distiller = make_distiller(settings, policy, memory, llm, examples)
        review = ReviewQueue(policy, memory, examples, classifier=distiller.classifier)
        guard = AbuseGuard(settings.rate_limit_messages, settings.rate_limit_window_s, settings.deflection_alert,
                           settings.deflection_window_s)
        agent = DelegateAgent(engine, audit, settings.max_message_chars, guard=guard,
                              approval_ttl=timedelta(hours=settings.approval_ttl_hours))
        agent.conversations = conversations
        agent.commands.verbs.update(AnnotationCommands(agent, distiller).verbs())
        runtime = cls(settings, policy, store, memory, overlay, audit, engine, agent, llm, distiller, owns_llm,
                      conversations, retriever, review)
        try:
            await agent.open()
        except BaseException:
            await runtime.close()
            raise
        return runtime

    async def close(self) -> None:
        if self.distiller is not None:
            await self.distiller.close()
        if self.llm is not None and self.owns_llm:
            await self.llm.aclose()
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
    if runtime.conversations is not None:
        from epmem.ingest.scenario_file import scenario_messages
        from epmem.memory.sessions import build_sessions

        messages, ids = scenario_messages(scenario, scenario.name)
        await runtime.conversations.clear()
        await runtime.conversations.add(build_sessions(messages, session_ids=ids))
    return len(facts)
