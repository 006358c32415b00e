"""Sessions in, annotated facts out: the ``pending`` -> ``annotated`` life cycle (docs/DESIGN.md sec. 2, 6).

On ingest, the offline extractor turns the owner's sentences into facts at once, so the owner
can recall a session the moment it arrives. With the rules backend those facts are the
annotated facts. With an LLM backend they are stored ``pending`` (level 0 for everyone but the
owner) and one ``extract_annotate`` call per session runs in the background; when it succeeds,
the session's pending facts are replaced by the model's facts, clamped by code
(epmem/ingest/extract.py). When it fails (timeout, HTTP error, refusal, malformed JSON) it is retried
with exponential backoff; after the last attempt the facts stay pending and the owner can
annotate them by command or ask for another try. Nothing fails open: a session whose annotation
never succeeds discloses nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

import structlog

from epmem.embedding.once import embedding_once
from epmem.identity import LOCAL
from epmem.ingest import twins
from epmem.ingest.annotate import CategoryClassifier
from epmem.ingest.extract import Finalizer
from epmem.ingest.extract_llm import LLMExtractor
from epmem.ingest.extract_rules import RulesExtractor
from epmem.ingest.unread import Unread
from epmem.memory.facts import Fact
from epmem.memory.nearest import FindsSimilar, NearestOnce
from epmem.llm.base import LLM, CallUsage, LLMError
from epmem.memory.recall import FactMemory
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import OWNER_ID, Policy
from epmem.memory.sessions import Session, Turn

log = structlog.get_logger(__name__)

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class AnnotationRetry:
    """Exponential backoff: base, base*factor, ... capped at max_s; ``attempts`` calls in all."""

    attempts: int = 4
    base_s: float = 2.0
    factor: float = 2.0
    max_s: float = 300.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("AnnotationRetry.attempts must be >= 1")
        if self.base_s < 0 or self.factor < 1 or self.max_s < 0:
            raise ValueError("AnnotationRetry delays must be >= 0 and factor >= 1")

    def delay(self, failed_attempts: int) -> float:
        return float(min(self.max_s, self.base_s * self.factor ** (failed_attempts - 1)))


@dataclass(slots=True)
class Outcome:
    """What happened to one session (the owner's /annotations view and the benchmark read it)."""

    session_id: str
    state: str  # "annotated" or "pending"
    backend: str
    facts: list[str] = field(default_factory=list)
    attempts: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: statements the rules could not turn into a fact (epmem/ingest/unread.py): shown, never lost.
    unread: list[Unread] = field(default_factory=list)

    def add_usage(self, usage: CallUsage) -> None:
        self.llm_calls += usage.calls
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens


class Distiller(ReadsPolicy):
    def __init__(
        self,
        policy: Policy | PolicyHolder,
        memory: FactMemory,
        classifier: CategoryClassifier,
        llm: LLM | None = None,
        retry: AnnotationRetry | None = None,
        sleep: Sleep = asyncio.sleep,
        *,
        open_by_category: bool = False,
    ) -> None:
        self._policy = PolicyHolder.of(policy)
        self.memory = memory
        self.classifier = classifier
        self.rules = RulesExtractor(policy, classifier)
        self.finalizer = Finalizer(policy, classifier, memory, open_by_category=open_by_category)
        self.model = LLMExtractor(policy, llm, memory) if llm is not None else None
        self.retry = retry or AnnotationRetry()
        self._sleep = sleep
        self._tasks: dict[str, asyncio.Task[Outcome]] = {}
        #: sessions whose facts are still pending, kept for /reannotate.
        self._pending: dict[str, Session] = {}
        self.outcomes: dict[str, Outcome] = {}
        self._lock = asyncio.Lock()

    @property
    def backend(self) -> str:
        return self.model.name if self.model is not None else "rules"

    # ------------------------------------------------------------------ ingest

    async def ingest(self, session: Session, *, background: bool = True) -> Outcome:
        """Store the session's facts now (annotated by rules, or pending for the model) and,
        with a model, start its annotation: in the background, or awaited."""
        outcome = await self.extract(session)
        if self.model is None:
            return outcome
        self._pending[session.id] = session
        if background:
            self.schedule(session)
            return outcome
        return await self.annotate_with_retries(session)

    async def extract(self, session: Session) -> Outcome:
        """Only the first stage: store the session's facts now (annotated by the rules, or pending
        for the model) and leave the model's annotation to whoever calls :meth:`annotate_with_retries`
        later (an import hands it to a background worker instead of waiting for it). Each text is
        embedded once (epmem/embedding/once.py: the import's cache, else the session's own)."""
        with embedding_once():
            return await self._extract(session)

    async def _extract(self, session: Session) -> Outcome:
        drafts, unread = self.rules.read(session)
        # with a model, every fact waits for it; the rules alone decide fact by fact (failclosed.py)
        forced = None if self.model is None else "pending"
        near = NearestOnce(self.memory)  # the session's neighbour look-ups, each asked once
        facts, notes = await self.finalizer.finalize(session, drafts, prefix="f", state=forced, near=near)
        async with self._lock:
            stored = await self._replace(session.id, facts, near)
        state = "pending" if forced or any(f.state == "pending" for f in stored) else "annotated"
        outcome = Outcome(session.id, state, "rules", [f.id for f in stored], notes=notes, unread=unread)
        self.outcomes[session.id] = outcome
        return outcome

    def schedule(self, session: Session) -> asyncio.Task[Outcome]:
        running = self._tasks.get(session.id)
        if running is not None and not running.done():
            return running
        task = asyncio.create_task(self.annotate_with_retries(session), name=f"annotate:{session.id}")
        self._tasks[session.id] = task
        task.add_done_callback(self._forget_task)
        return task

    def _forget_task(self, task: asyncio.Task[Outcome]) -> None:
        for sid, running in list(self._tasks.items()):
            if running is task:
                del self._tasks[sid]

    async def annotate_with_retries(self, session: Session) -> Outcome:
        outcome = self.outcomes.get(session.id) or Outcome(session.id, "pending", self.backend)
        for attempt in range(1, self.retry.attempts + 1):
            try:
                return await self.annotate(session, outcome)
            except LLMError as exc:
                outcome.attempts += 1
                outcome.add_usage(exc.usage)
                outcome.errors.append(exc.kind)
                log.warning("annotate.failed", session=session.id, attempt=attempt, kind=exc.kind)
                if attempt < self.retry.attempts:
                    await self._sleep(self.retry.delay(attempt))
        log.warning("annotate.gave_up", session=session.id, attempts=outcome.attempts)
        return outcome

    async def annotate(self, session: Session, outcome: Outcome | None = None) -> Outcome:
        """One attempt (one LLM call). Raises LLMError; on success the session's facts are the
        model's facts, annotated."""
        if self.model is None:
            raise RuntimeError("no LLM configured: the rules backend annotates on ingest")
        outcome = outcome or self.outcomes.get(session.id) or Outcome(session.id, "pending", self.backend)
        proposal = await self.model.propose(session)
        outcome.attempts += 1
        outcome.add_usage(proposal.usage)
        with embedding_once():
            near = NearestOnce(self.memory)
            facts, notes = await self.finalizer.finalize(
                session, proposal.drafts, prefix="m", state="annotated", known_events=proposal.known_events, near=near
            )
            async with self._lock:
                stored = await self._replace(session.id, facts, near)
        outcome.state, outcome.backend = "annotated", self.backend
        outcome.facts = [f.id for f in stored]
        outcome.notes += notes
        self.outcomes[session.id] = outcome
        self._pending.pop(session.id, None)
        log.info("annotate.ok", session=session.id, facts=len(stored), clamped=len(notes))
        return outcome

    async def remember(self, text: str, note_id: str, when: datetime | None = None) -> list[Fact]:
        """An owner's note (/remember) through the same extraction and fail-closed rules as a
        chat: a note is a session the owner had alone. "Do not tell anyone: ..." is a cue, not
        part of the fact; "..., do not tell Tom" blacklists Tom."""
        when = when or datetime.now(timezone.utc)
        sid = f"note-{note_id}"
        session = Session(
            id=sid,
            platform=LOCAL.platform,
            chat_id=sid,
            chat_kind="direct",
            participants=[OWNER_ID],
            members=[OWNER_ID],
            turns=[
                Turn(
                    id=f"{sid}/0",
                    session_id=sid,
                    index=0,
                    speaker=OWNER_ID,
                    speaker_name=self.policy.owner.name,
                    text=text,
                    time=when,
                    msg_id="0",
                )
            ],
        )
        outcome = await self.ingest(session, background=True)
        stored = {f.id: f for f in await self.memory.of_session(sid)}
        return [stored[fid] for fid in outcome.facts if fid in stored]

    # ------------------------------------------------------------------ storage

    async def _replace(self, session_id: str, facts: Sequence[Fact], near: FindsSimilar | None = None) -> list[Fact]:
        """The session's facts become ``facts``; what the owner set by hand is kept as is.

        A fact identical to an annotated fact of another session (an owner message addressed
        to two people of a group sits in both sub-sessions) is merged into it instead of
        stored twice, and the merge only narrows: the lower level, both blacklists."""
        old = await self.memory.of_session(session_id)
        kept = [f for f in old if f.state == "owner-set"]
        kept_texts = {f.text.casefold() for f in kept}
        new = [f for f in facts if f.text.casefold() not in kept_texts]
        new, narrowed = await self._twin_news(session_id, new, near or self.memory)
        fresh, merged = await self._dedupe(session_id, new, near or self.memory)
        merged_ids = {m.id for m in merged}
        merged += [t for t in narrowed if t.id not in merged_ids]
        stale = [f.id for f in old if f.state != "owner-set" and f.id not in {x.id for x in fresh}]
        if stale:
            await self.memory.forget(stale)
        if fresh or merged:
            await self.memory.add([*fresh, *merged])
        return [*kept, *fresh]

    async def _twin_news(
        self, session_id: str, facts: Sequence[Fact], near: FindsSimilar
    ) -> tuple[list[Fact], list[Fact]]:
        """The same news stored from another conversation narrows these facts and is narrowed by
        them (epmem/ingest/twins.py): returns the facts and the stored twins that changed."""
        truths = [f for f in facts if f.version == "truth"]
        if not truths:
            return list(facts), []
        rows = await near.similar([f.text for f in truths], limit=5)
        out = {f.id: f for f in facts}
        changed: dict[str, Fact] = {}
        for f, row in zip(truths, rows):
            for g, score in row:
                if score < twins.SAME_NEWS or g.session_id == session_id or g.id in out:
                    continue
                g = changed.get(g.id, g)
                out[f.id] = twins.narrow(out[f.id], g)
                g2 = twins.narrow(g, out[f.id])
                if g2 is not g:
                    changed[g.id] = g2
        return [out[f.id] for f in facts], list(changed.values())

    async def _dedupe(
        self, session_id: str, facts: Sequence[Fact], near: FindsSimilar
    ) -> tuple[list[Fact], list[Fact]]:
        """Annotated facts that say, word for word, what a fact of another session says are
        merged into it (the same information: the stricter annotation wins).

        Every stored fact with the same words is considered (:meth:`_same_words`), and among
        the annotated and owner-set ones the lowest id is the twin. It used to be the first of
        the three nearest facts of any state: copies waiting for review could crowd it out, and
        the store lists equals in an order that differs in a new process, so an import stopped
        and resumed came out different from one run straight through (a fact at level 0
        instead of 2)."""
        annotated = [f for f in facts if f.state == "annotated"]
        if not annotated:
            return list(facts), []
        twins: dict[str, Fact] = {}
        for f, same in zip(annotated, await self._same_words([f.text for f in annotated], near)):
            settled = [g for g in same if g.session_id != session_id and g.state != "pending"]
            if settled:
                twins[f.id] = min(settled, key=lambda g: g.id)
        fresh = [f for f in facts if f.id not in twins]
        merged: dict[str, Fact] = {}
        for fid, twin in twins.items():
            if twin.state == "owner-set":
                continue
            f = next(x for x in facts if x.id == fid)
            base = merged.get(twin.id, twin)
            black = list(dict.fromkeys([*base.blacklist, *f.blacklist]))
            white = [w for w in dict.fromkeys([*base.whitelist, *f.whitelist]) if w not in black]
            level = min(base.effective_level(), f.effective_level())
            merged[twin.id] = base.model_copy(update={"level": level, "blacklist": black, "whitelist": white})
        return fresh, list(merged.values())

    async def _same_words(self, texts: Sequence[str], near: FindsSimilar) -> list[list[Fact]]:
        """Every stored fact whose text is ``text`` word for word (case aside), for each text.

        The same words embed to the same vector, so they are the nearest facts of all; a search
        whose every hit has the same words may have been cut off among equals, so it is asked
        again for more until one hit differs (an unfiltered exact search is cheap; a filter on
        an unindexed field was not: 2.6 times slower imports)."""
        limit = 8
        rows = await near.similar(texts, limit=limit)
        out: list[list[Fact]] = []
        for text, row in zip(texts, rows):
            key = text.casefold()
            wanted = limit
            while len(row) == wanted and all(g.text.casefold() == key for g, _ in row):
                wanted *= 4
                row = (await near.similar([text], limit=wanted))[0]
            out.append([g for g, score in row if score >= 0.98 and g.text.casefold() == key])
        return out

    # ------------------------------------------------------------------ control

    def pending(self) -> list[str]:
        return sorted(self._pending)

    def reannotate(self, session_ids: Sequence[str] | None = None) -> list[str]:
        """Try the model again for pending sessions (all of them by default)."""
        chosen = [s for s in (session_ids or list(self._pending)) if s in self._pending]
        for sid in chosen:
            self.schedule(self._pending[sid])
        return chosen

    async def drain(self) -> None:
        """Wait for every background annotation (benchmarks, tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
