"""The consultation flow: ask the owner about closed facts when a question needs them, and
follow up once the owner has answered (the table is bot/consultations/store.py).

1. ``ask_about``: after a contact's reply has been decided and audited (it never depends on
   what follows), the best undecided closed fact that would answer the question is put to the
   owner as a review question of its event: who asked, the question, the facts' words, and
   one-tap answers. ``/consult ID tell | like | who | private`` (bot/commands/consult.py).
   Further events the cross-encoder is sure answer the question go in the same message, up to
   ``ConsultConfig.per_message``: each its own consultation, section and buttons; the message
   (the rows' ``batch``) is one consultation for the bounds.
2. ``answer``: the owner's answer applies to every fact of that event (the review queue does it,
   so it is audited and teaches the classifier like any review answer) and to later askers.
3. ``follow_up_events`` (bot/consultations/followup.py): every asker still waiting on that event
   gets the question answered again, decided at send time (the policy may have changed;
   composites; in a group, whoever is in it then, ``Outbox.readers``), and the reply is sent in
   the same chat only if it now tells something of that event. Audited like any reply, with its
   ledger lines.
4. ``ask_next``: one reply may lead to up to ``ConsultConfig.per_reply`` messages to the owner,
   one at a time: once the owner has answered every event of one, the next events that would
   answer the same question and are still closed are put to the owner in the answer's reply (a
   question often needs more than one event: "What's new with the family?"), never two
   messages at once. An answer that keeps a truth from
   the asker is followed at once by the question about its cover story, still closed: what they
   may hear instead is part of the same event (``_stories_instead``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from connectors.base import Action, Inbound
from epmem.audit import ConsultationRecord
from epmem.ingest import ReviewAnswer, ReviewError
from epmem.ingest import ReviewQuestion as Question
from epmem.memory import Fact
from epmem.policy import Recipient, Resolved, audience_allows
from epmem.reply import ClosedCandidates

from bot.consultations.bounds import check, record_skip, same_news
from bot.consultations.audience import like, readers, whitelistable
from bot.consultations.callback import KEYS, tag
from bot.consultations.followup import follow_up_events
from bot.consultations.gate import may_consult
from bot.consultations.learning import earlier_answers
from bot.consultations.store import Consultation
from bot.consultations.wording import actions, grouped_actions, notes
from bot.services import OwnerServices

log = structlog.get_logger(__name__)


async def ask_owner(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    question: str,
    fact_id: str | None,
    audit_id: str,
) -> tuple[str | None, tuple[Action, ...]]:
    """Open a consultation for ``fact_id``, the best closed fact that would answer (None: none
    would); the owner's note and buttons when the owner is to be asked now (None when the
    bounds say no, or another asker's consultation of the same event already asked)."""
    return await ask_about(owner, inbound, sender, audience, question, [fact_id] if fact_id else [], audit_id)


async def ask_about(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    question: str,
    fact_ids: Sequence[str],
    audit_id: str,
    *,
    besides: Sequence[str] = (),
) -> tuple[str | None, tuple[Action, ...]]:
    """One message to the owner about the events of ``fact_ids`` (closed facts that would
    answer, best first), at most ``per_message`` of them: each event that passes what one
    consultation must (a reviewable question, this asker not waiting on it already, the bounds)
    and is not in ``besides`` nor news an event before it in the message tells already is its
    own consultation, its own section of the note and its own buttons; together they are one
    batch, one consultation for the bounds and ``per_reply``.
    The note and buttons, or None when no event asks the owner now (the bounds say no, or
    another asker's consultation of each event asked already: those join it)."""
    service = owner.consultations
    if service is None or not fact_ids or not may_consult(owner, inbound, sender, audience):
        return None, ()
    seen = set(besides)
    batch: str | None = None
    opened: list[Fact] = []
    asked: list[tuple[Consultation, Question, Fact]] = []
    for fact_id in fact_ids:
        if len(opened) >= service.config.per_message:
            break
        try:
            q = await service.review.question(fact_id)
        except ReviewError:
            continue
        fact = await owner.memory.get(q.fact_id)
        if fact is None or fact.event_id in seen:
            continue
        seen.add(fact.event_id)
        if await same_news(owner, fact, opened):  # the same news stored twice: asked once
            continue
        c = await _open(owner, inbound, sender, audience, question, q, fact, audit_id, batch)
        if c is None:
            continue
        batch = c.batch
        opened.append(fact)
        if c.asked_owner:
            asked.append((c, q, fact))
    if not asked:
        return None, ()
    buttons = []
    for c, q, fact in asked:
        earlier = await earlier_answers(owner, fact)
        first = earlier[0][0] if earlier else None
        buttons.append(actions(owner, c, q, sender, first if first in KEYS else None))
    return notes(owner, [(c, q) for c, q, _ in asked], sender), grouped_actions(owner, buttons)


async def _open(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    question: str,
    q: Question,
    fact: Fact,
    audit_id: str,
    batch: str | None,
) -> Consultation | None:
    """The consultation of ``fact``'s event for this asker, in message ``batch`` (None: a new
    one), audited; None when this asker waits on it already or the bounds say no (written down
    for the digest, bot/consultations/bounds.py)."""
    service = owner.consultations
    assert service is not None
    if await service.store.waits(inbound.sender, fact.event_id):
        return None
    reason = await check(owner, service.store, fact, sender, audience, batch)
    if reason is not None:
        facts = [q.fact_id, *q.also]
        await record_skip(owner, inbound, sender, fact, facts, q.suggested.category, reason, audit_id)
        return None
    c = await service.store.open(
        event_id=fact.event_id,
        facts=[q.fact_id, *q.also],
        platform=inbound.platform,
        chat_id=inbound.chat_id,
        chat_kind=inbound.chat_kind,
        sender=inbound.sender,
        contact=sender.label,
        contact_id=None if sender.recipient.is_stranger else sender.contact_id,
        audience=[r.identity for r in audience],
        question=question,
        audit_id=audit_id,
        batch=batch,
    )
    if c is None:
        return None
    await owner.audit.write(
        ConsultationRecord(
            consultation=c.id,
            platform=c.platform,
            chat=c.chat_id,
            contact=c.contact,
            question=question,
            event=c.event_id,
            facts=list(c.facts),
            reply_audit=audit_id,
            joined=c.lead,
            batch=c.batch,
        ),
        contact=c.contact,
    )
    log.info("consultation_opened", consultation=c.id, contact=c.contact, facts=len(c.facts), joined=c.lead)
    return c


@dataclass(frozen=True, slots=True)
class Settled:
    message: str
    #: the audit ids of the follow-ups delivered, and of those the platform did not take.
    followups: tuple[str, ...] = ()
    undelivered: tuple[str, ...] = ()
    #: the next consultation the same question leads to (``ask_next``): its note and buttons.
    ask: str | None = None
    actions: tuple[Action, ...] = ()


def review_answer(owner: OwnerServices, c: Consultation, q: Question, key: str) -> ReviewAnswer:
    """The review answer a consultation key stands for (``who`` is the review picker, not here)."""
    s = q.suggested
    if key == "private":
        return ReviewAnswer.private(q.fact_id)
    people = readers(owner, c)
    told = {r.contact_id for r in people}
    if key == "tell":
        if not whitelistable(people):
            raise ReviewError("a stranger cannot be told alone: use like, who or private")
        return ReviewAnswer.set(
            q.fact_id,
            s.category,
            level=0,
            domain=s.domain,
            whitelist=[*s.whitelist, *(r.contact_id for r in people if r.contact_id not in s.whitelist)],
            blacklist=[b for b in s.blacklist if b not in told],
        )
    if key == "like":
        level, domain = like(people)
        return ReviewAnswer.set(
            q.fact_id,
            s.category,
            level=level,
            domain=domain,  # type: ignore[arg-type]
            whitelist=list(s.whitelist),
            blacklist=[b for b in s.blacklist if b not in told],
        )
    raise ReviewError(f"unknown answer {key!r}: use {', '.join(KEYS)}")


def cover_answer(q: Question, truth_id: str) -> ReviewAnswer:
    """ "It is my cover story for ``truth_id``": the fact is told as the suggestion says (a cover
    is for telling), in the truth's event, instead of the truth to whoever may not know it."""
    return ReviewAnswer.accept(q.fact_id).covering(truth_id)


async def answer(
    owner: OwnerServices, c: Consultation, decision: ReviewAnswer, key: str, *, by: str, platform: str
) -> Settled:
    """Apply the owner's decision to the consultation's event, then follow up everyone waiting."""
    service = owner.consultations
    if service is None:
        raise ReviewError("consultations are not available in this process")
    applied = await service.review.apply(decision, tag=tag(key))
    await owner.record_change({**applied.audit, "consultation": c.id, "answer": key, "by": by, "platform": platform})
    sent = await follow_up_events(owner, applied.facts, key, also_events=(c.event_id,))
    ask, buttons = await ask_next(owner, c)
    return Settled(
        applied.message, tuple(a for a, ok in sent if ok), tuple(a for a, ok in sent if not ok), ask, buttons
    )


async def ask_next(owner: OwnerServices, c: Consultation) -> tuple[str | None, tuple[Action, ...]]:
    """After the owner's answer to ``c``: what the reader may hear instead, when the answer kept
    the truth from them and its cover story is undecided (:func:`_stories_instead`); else the
    next closed events that would answer the same question for the same reader (one message,
    up to ``per_message`` of them, none already in ``c``'s message), once every event of ``c``'s
    message is answered and while the reply has led to fewer than ``per_reply`` messages. The closed candidates are asked for again
    now, once (what the owner just opened is open, what they kept private is decided), so the
    next is the likeliest of what is still undecided."""
    service = owner.consultations
    if service is None:
        return None, ()
    people = readers(owner, c)
    sender = owner.directory.resolve(c.sender)
    inbound = Inbound(
        platform=c.platform,
        chat_id=c.chat_id,
        chat_kind=c.chat_kind,
        sender=c.sender,
        text=c.question,
        audience=c.audience,
    )
    if not may_consult(owner, inbound, sender, people):
        return None, ()
    audience = [r.recipient for r in people]
    stories = await _stories_instead(owner, c, audience)
    again: ClosedCandidates | None = None
    if stories:
        again = await owner.engine.closed_candidates(c.question, audience, sender.recipient)
        if again.best in stories:
            return await ask_owner(owner, inbound, sender, people, c.question, again.best, c.audit_id)
    # the rest of the message first: the owner answers its events one by one
    message = await service.store.in_batch(c.batch)
    if any(m.state == "open" and m.asked_owner for m in message):
        return None, ()
    if await service.store.for_reply(c.audit_id) >= service.config.per_reply:
        return None, ()
    if again is None:
        again = await owner.engine.closed_candidates(c.question, audience, sender.recipient)
    # only events the cross-encoder is sure answer: each further note costs the owner a tap
    besides = [m.event_id for m in message]
    return await ask_about(owner, inbound, sender, people, c.question, again.sure, c.audit_id, besides=besides)


async def _stories_instead(owner: OwnerServices, c: Consultation, audience: Sequence[Recipient]) -> set[str]:
    """The undecided cover stories of the truths ``c`` asked about, once the owner's answer has
    kept every one of those truths from these readers. A truth and its story are two questions
    about one event (one answer cannot be both "not the truth" and "the story"): the story is
    asked right after, whatever ``per_reply`` says, and only when the question, answered again,
    would tell it first. The owner's answer stands for the story alone."""
    event = await owner.memory.by_event([c.event_id])
    asked = [f for f in event if f.id in c.facts and f.version == "truth"]
    rulebook = await owner.engine.rulebook()
    if not asked or any(audience_allows(rulebook.gate(f), audience) for f in asked):
        return set()
    truths = {f.id for f in asked}
    return {f.id for f in event if f.covers in truths and f.undecided}
