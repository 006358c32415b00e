"""The privacy engine: recall, adjudicate, project, choose, compose.

This is the only place where memory meets a reply, and the order is fixed: nothing reaches the
responder until the calculus has allowed it for every reader. Of the facts that may be said,
the relevance step keeps those that answer the question (epmem/reply/relevance/; with a
model configured, the model chooses among them instead, epmem/reply/model_choice.py), and what
one reply tells together must pass the composite rule for every reader
(epmem/reply/composite.py). The responder gets a :class:`ReplyContext` built from those facts
alone, so even a model that repeated its whole context would repeat nothing it may not say.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from epmem.language import Language, choose, of, say
from epmem.policy.calculus import Recipient, Rulebook, audience_allows
from epmem.reply.compose import ReplyWriter, Written
from epmem.reply.composite import HeldBack, limit_to_composite
from epmem.reply.cumulative import Knowledge, gather
from epmem.reply.guard import Denied
from epmem.reply.model_choice import ModelChooser
from epmem.memory.facts import Fact
from epmem.language.english import is_catch_up
from epmem.memory.recall import FactMemory, RecalledEvent, together
from epmem.policy.overlay import Overlay
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import Policy
from epmem.reply.projection import FactDecision, Projection, project
from epmem.reply.relevance import Choice, Relevance, best_by_event
from epmem.reply.respond import ReplyContext, Responder, deflection
from epmem.reply.smalltalk import small_talk


@dataclass(frozen=True, slots=True)
class Answer:
    reply: str
    deflected: bool
    projection: Projection
    backend: str
    latency_ms: float
    notes: tuple[str, ...] = field(default=())
    #: how the words were made: composer, LLM call, post-check (None for a deflection).
    written: Written | None = None
    #: what the relevance step chose, and what the composite rule held back.
    choice: Choice | None = None
    held: tuple[HeldBack, ...] = ()

    @property
    def small_talk(self) -> str | None:
        """What kind of small talk the question was ("hi"), answered from the message alone; None
        when it was answered from memory."""
        return next((n.removeprefix("small_talk:") for n in self.notes if n.startswith("small_talk:")), None)

    @property
    def used(self) -> list[FactDecision]:
        """What the reply discloses (nothing when the post-check had to deflect)."""
        if self.written is not None and self.written.postcheck == "deflected":
            return []
        return self.projection.used

    def audit_body(self) -> dict[str, object]:
        body: dict[str, object] = {
            "candidates": [d.as_dict() for d in self.projection.decisions],
            "disclosed": [d.fact.id for d in self.used],
            "deflected": self.deflected,
            "reply": self.reply,
            "backend": self.backend,
            "latency_ms": round(self.latency_ms, 2),
            "notes": list(self.notes),
        }
        if self.choice is not None:
            body["relevance"] = self.choice.audit()
        if self.held:
            body["held_back"] = [h.as_dict() for h in self.held]
        if self.written is not None:
            body.update(self.written.audit())
        else:
            body.update({"composer": "deflection", "llm": {"calls": 0}})
        return body


@dataclass(frozen=True, slots=True)
class ClosedCandidates:
    """Closed facts the owner has not decided about that would answer a question for an
    audience, best first (chosen as the reply chooses among open facts): what a consultation
    asks the owner about (:meth:`PrivacyEngine.closed_candidates`). Never part of a reply: the
    reply reads the same whether these exist or not."""

    facts: tuple[str, ...] = ()
    #: those of ``facts`` whose event the cross-encoder (or its stand-in) is sure answers the
    #: question (``RelevanceConfig.answers``): a further consultation for one question must be worth it.
    sure: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.facts)

    @property
    def best(self) -> str | None:
        return self.facts[0] if self.facts else None

    def audit(self) -> dict[str, object]:
        """What a reply's record says of them (``closed_would_answer``), nothing when none."""
        return {"closed_would_answer": list(self.facts)} if self.facts else {}


class PrivacyEngine(ReadsPolicy):
    def __init__(
        self,
        policy: Policy | PolicyHolder,
        overlay: Overlay,
        memory: FactMemory,
        responder: Responder,
        relevance: Relevance | None = None,
        knowledge: Knowledge | None = None,
        per_matter: bool = False,
        chooser: ModelChooser | None = None,
        heard_it: bool = True,
    ) -> None:
        """``knowledge``: what readers already know, by matter (None: each reply judged alone);
        ``per_matter``: one reply's facts judged matter by matter (epmem/reply/composite.py);
        ``chooser``: the model chooses which allowed facts answer (None: the relevance step);
        ``heard_it``: undecided facts open to whoever heard them said (``EPMEM_HEARD_IT``;
        the owner's ``/heard`` overrides it)."""
        self._policy = PolicyHolder.of(policy)
        self.knowledge = knowledge
        self.per_matter = per_matter
        self.overlay = overlay
        self.memory = memory
        self.responder = responder
        self.relevance = relevance or Relevance()
        self.chooser = chooser
        self.writer = ReplyWriter(responder)
        self.heard_it = heard_it

    async def rulebook(self, now: datetime | None = None) -> Rulebook:
        extra = [e for _, e in await self.overlay.exceptions()]
        return Rulebook(self.policy, extra, now, await self.overlay.heard_it(self.heard_it))

    async def answer(
        self,
        question: str,
        audience: Sequence[Recipient],
        recipient: Recipient,
        recent_turns: Sequence[str] = (),
        now: datetime | None = None,
        language: Language | None = None,
    ) -> Answer:
        """Answer ``question`` for everyone in ``audience`` (every reader must be allowed);
        ``language``: the reply's, else the question's, the asker's or the owner's (:meth:`language_for`)."""
        return await self._answer(question, audience, recipient, recent_turns, now, language, None)

    async def answer_about(
        self,
        events: Collection[str],
        question: str,
        audience: Sequence[Recipient],
        recipient: Recipient,
        now: datetime | None = None,
    ) -> Answer:
        """:meth:`answer` from these events' facts alone (a consultation's follow-up is about the
        event the owner answered for)."""
        return await self._answer(question, audience, recipient, (), now, None, events)

    async def _answer(
        self,
        question: str,
        audience: Sequence[Recipient],
        recipient: Recipient,
        recent_turns: Sequence[str],
        now: datetime | None,
        language: Language | None,
        only_events: Collection[str] | None,
    ) -> Answer:
        started = time.perf_counter()
        lang = language or self.language_for(question, recipient)
        talk = small_talk(question, [self.policy.owner.name, recipient.name])
        if talk is not None:  # "hi": answered in kind, from the message alone (no fact, no consultation)
            reply = say(talk, lang, owner=self.policy.owner.name)
            elapsed = (time.perf_counter() - started) * 1000
            return Answer(reply, False, Projection(()), self.responder.name, elapsed, notes=(f"small_talk:{talk}",))
        events, asked = await self.recall(question, recipient.id)
        if only_events is not None:
            events = [ev for ev in events if ev.event_id in only_events]
            asked = {q: [ev for ev in evs if ev.event_id in only_events] for q, evs in asked.items()}
        rulebook = await self.rulebook(now)
        projection, choice, held = await self._choose(question, events, rulebook, audience, recent_turns, asked)
        facts = tuple(dict.fromkeys(d.fact.text for d in projection.used))
        written: Written | None = None
        if not facts:
            reply, deflected = deflection(self.policy.owner.name, lang), True
        else:
            ctx = ReplyContext(
                owner_name=self.policy.owner.name,
                persona=self.policy.owner.persona,
                recipient_name=recipient.name,
                relationship=recipient.relationship,
                question=question,
                facts=facts,
                recent_turns=tuple(recent_turns),
                language=lang,
            )
            denied = [Denied(d.fact.id, d.fact.text) for d in projection.decisions if not d.allowed]
            written = await self.writer.write(
                ctx, denied, [r.name for r in audience], lambda: self._nearby_denied(question, audience, rulebook)
            )
            reply, deflected = written.text, written.postcheck == "deflected"
        return Answer(
            reply,
            deflected,
            projection,
            self.responder.name,
            (time.perf_counter() - started) * 1000,
            written=written,
            choice=choice,
            held=tuple(held),
        )

    async def closed_candidates(
        self,
        question: str,
        audience: Sequence[Recipient],
        recipient: Recipient,
        told: Collection[str] | None = None,
        now: datetime | None = None,
    ) -> ClosedCandidates:
        """Which undecided closed facts would answer ``question`` for ``audience`` (best first),
        the reply having told ``told`` (the fact ids of its ``projection.used``). ``told`` None:
        the reply as :meth:`answer` would choose it now, chosen here without writing it (small
        talk tells nothing and has none). Asked after the reply has gone (a reply that waited for
        it would take longer whenever a secret exists: a timing side channel)."""
        if told is None and small_talk(question, [self.policy.owner.name, recipient.name]) is not None:
            return ClosedCandidates()
        events, asked = await self.recall(question)
        rulebook = await self.rulebook(now)
        if told is None:
            projection, _, _ = await self._choose(question, events, rulebook, audience, (), asked)
            told = {d.fact.id for d in projection.used}
        return self._closed_would_answer(question, events, rulebook, audience, told, asked)

    def _people(self) -> list[tuple[str, ...]]:
        """Each contact's name and aliases, as the policy has them now (relevance reads a
        contact in a question as the facts name them)."""
        return [(c.name, *c.aliases) for c in self.policy.contacts.values()]

    def language_for(self, text: str | None, recipient: Recipient | None = None) -> Language:
        """The language to answer ``text`` in: its own; when it has no letters to tell by, the
        contact's (policy ``contacts.ID.language``), then the owner's (``owner.language``)."""
        contact = self.policy.contacts.get(recipient.id) if recipient is not None else None
        return choose(text, contact.language if contact is not None else None, self.policy.owner.language)

    async def recall(
        self, question: str, listener: str | None = None
    ) -> tuple[list[RecalledEvent], dict[str, list[RecalledEvent]]]:
        """What recall finds for ``question``, and, where it asks several questions (the
        language's ``questions``), what it finds for each alone, all of that together in the
        first (the message is recalled question by question only: a reply's cost grows by one
        recall per question asked, not two).
        ``listener``: the contact who asks (a question pointing back to an earlier chat reads
        what they heard or said)."""
        spec = of(question)

        async def one(q: str) -> list[RecalledEvent]:
            asker = listener if listener is not None and spec.refers_back(q) else None
            return await self.memory.recall(q, asker)

        parts = spec.questions(question)
        if not 1 < len(parts) <= self.relevance.config_for(question).max_facts:
            # more questions than a reply tells facts: read as one (a reply's cost stays bounded)
            return await one(question), {}
        asked = {q: await one(q) for q in parts}
        return together(*asked.values()), asked

    async def _choose(
        self,
        question: str,
        events: Sequence[RecalledEvent],
        rulebook: Rulebook,
        audience: Sequence[Recipient],
        recent_turns: Sequence[str] = (),
        asked: Mapping[str, Sequence[RecalledEvent]] | None = None,
    ) -> tuple[Projection, Choice, list[HeldBack]]:
        """The storyline, narrowed to what answers the question and may be told together, with
        what each reader already knows of the same matters (epmem/reply/cumulative.py)."""
        storyline = project(events, rulebook, audience)
        choice = self.relevance.choose(question, events, storyline, self.policy.owner.name, asked, self._people())
        if self.chooser is not None:  # shown the storyline alone: what every reader may know
            choice = await self.chooser.choose(question, storyline, choice, self.policy.owner.name, recent_turns)
        by_id = {d.fact.id: d.fact for d in storyline.decisions}
        chosen = [by_id[f] for f in choice.chosen]
        earlier = await gather(self.knowledge, chosen, {r.id for r in audience}, rulebook, self.memory.by_event)
        kept, held = limit_to_composite(
            [rulebook.gate(f) for f in chosen],
            audience,
            earlier,
            {f.id: earlier.matters.matter(f.event_id) for f in chosen},
            self.per_matter,
            choice.answers,
        )
        narrowed = storyline.narrowed(kept, choice.scores)
        near = _near_events(question, events, set(choice.chosen), self.relevance.config.min_recall)
        return Projection(tuple(d for d in narrowed.decisions if d.fact.event_id in near)), choice, held

    def _closed_would_answer(
        self,
        question: str,
        events: Sequence[RecalledEvent],
        rulebook: Rulebook,
        audience: Sequence[Recipient],
        told: Collection[str] = (),
        asked: Mapping[str, Sequence[RecalledEvent]] | None = None,
    ) -> ClosedCandidates:
        """The undecided closed facts the reply would choose if they were open to this audience
        (the same relevance step, run on the storyline with them let in). A blacklist or a
        never-share category still shuts them: the owner is not asked about what they already
        said no to. Nor about what the reply already ``told``: a closed fact of an event the
        reply told a fact of (the asker heard that news said, or it was open) adds nothing worth
        the owner's time. Computed after the reply was chosen and never fed back into it."""
        # only what the asker may not know yet: a fact they heard said is told, not asked about
        undecided = {
            r.fact.id
            for ev in events
            for r in ev.facts
            if r.fact.undecided and not audience_allows(rulebook.gate(r.fact), audience)
        }
        if not undecided:
            return ClosedCandidates()

        def opening(evs: Sequence[RecalledEvent]) -> list[RecalledEvent]:
            return [
                replace(
                    ev,
                    facts=tuple(replace(r, fact=_opened(r.fact)) if r.fact.id in undecided else r for r in ev.facts),
                )
                for ev in evs
            ]

        opened = opening(events)
        storyline = project(opened, rulebook, audience)
        if not any(d.used and d.fact.id in undecided for d in storyline.decisions):
            return ClosedCandidates()
        opened_asked = {q: opening(evs) for q, evs in (asked or {}).items()}
        choice = self.relevance.choose(
            question, opened, storyline, self.policy.owner.name, opened_asked, self._people()
        )
        event_of = {d.fact.id: d.fact.event_id for d in storyline.decisions}
        answered = {event_of[f] for f in told if f in event_of}
        chosen = tuple(f for f in choice.chosen if f in undecided and event_of.get(f) not in answered)
        sure = _sure(chosen, event_of, choice.logits, self.relevance.config_for(question).answers)
        return ClosedCandidates(chosen, sure)

    async def _nearby_denied(
        self, question: str, audience: Sequence[Recipient], rulebook: Rulebook, limit: int = 16
    ) -> list[Denied]:
        """Facts near the question that someone in the audience may not know, relevant or not
        (for the post-check of a model's reply only; see epmem/reply/compose.py)."""
        rows = await self.memory.similar([question], limit)
        return [Denied(f.id, f.text) for f, _ in rows[0] if not audience_allows(rulebook.gate(f), audience)]

    async def owner_recall(self, question: str) -> Answer:
        """The owner may know everything: every relevant fact, with its id and annotation.
        Recall's floor is low so that the relevance step may rescue a weakly recalled fact;
        the owner sees the events that reach the relevance step's ``min_recall``, as before."""
        started = time.perf_counter()
        recalled = await self.memory.recall(question)
        near = _near_events(question, recalled, set(), self.relevance.config.min_recall)
        events = [ev for ev in recalled if ev.event_id in near]
        decisions = tuple(FactDecision(r.fact, r.score, True, (), True) for ev in events for r in ev.facts)
        if decisions:
            lines = [
                f"[{d.fact.id}] {d.fact.text} ({d.fact.version}, {d.fact.category}, "
                f"L{d.fact.effective_level()}{', ' + d.fact.domain if d.fact.domain else ''})"
                for d in decisions
            ]
            reply = "From your memory:\n" + "\n".join(lines)
        else:
            reply = "Nothing in your memory matches that."
        return Answer(
            reply, not decisions, Projection(decisions), "owner-recall", (time.perf_counter() - started) * 1000
        )


def _sure(chosen: Sequence[str], event_of: dict[str, str], logits: dict[str, float], answers: float) -> tuple[str, ...]:
    """The facts of ``chosen`` whose event the cross-encoder (or its stand-in) read and rated at
    least ``answers`` by its best fact (a fact recall found strongly enough to be chosen unread
    was not rated: not sure)."""
    best = best_by_event(chosen, event_of, logits)
    return tuple(f for f in chosen if best.get(event_of[f], -math.inf) >= answers)


def _opened(fact: Fact) -> Fact:
    """A closed fact as if the owner had opened it to anyone (only to ask whether it answers)."""
    return fact.model_copy(update={"closed": False, "state": "annotated", "level": 4, "domain": None})


def _near_events(question: str, events: Sequence[RecalledEvent], told: set[str], least: float) -> set[str]:
    """The events a reply's record names as candidates: those with a fact at the relevance
    step's ``min_recall`` (every event for a catch-up), and those it told a fact of. Recall's
    floor is lower, for the relevance step's rescue of a weakly recalled fact; a record naming
    every such fact would be noisy, and /forget would erase the texts of records that never
    came near the fact."""
    if is_catch_up(question):
        return {ev.event_id for ev in events}
    return {ev.event_id for ev in events if any(r.score >= least or r.fact.id in told for r in ev.facts)}
