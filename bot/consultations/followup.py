"""Following up once the owner has answered: every asker still waiting on the event gets the
question answered again, decided at send time (the policy may have changed; composites; in a
group, whoever is in it then, ``Outbox.readers``), and the reply is sent in the same chat only
if it now tells something of that event. Audited like any reply, with its ledger lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog

from connectors.courier import maybe_delivered
from epmem.audit import REFUSED, UNKNOWN, DeliveryFailedRecord, FollowupRecord, FollowupSkippedRecord
from epmem.identity import LOCAL
from epmem.memory import Fact
from epmem.policy import Resolved

from bot.consultations.audience import readers
from bot.consultations.store import Consultation
from bot.consultations.wording import joined_note
from bot.services import OwnerServices

log = structlog.get_logger(__name__)


async def follow_up_events(
    owner: OwnerServices, facts: Sequence[Fact], how: str, also_events: Sequence[str] = ()
) -> list[tuple[str, bool]]:
    """The owner has decided about these facts (a consultation, /review): every consultation
    waiting on their events is answered, and its asker followed up where the answer lets them
    know. Returns each follow-up's audit id and whether the platform took it. ``also_events``:
    events the facts were in before the answer (a cover story moves into its truth's event)."""
    service = owner.consultations
    if service is None:
        return []
    sent: list[tuple[str, bool]] = []
    #: one reply's consultations in one chat: the first follow-up answers the question for all
    #: (a cover story moved into the event of another consultation of the same message)
    answered: dict[tuple[str, str, str], str] = {}
    for c in await service.store.waiting_on(sorted({f.event_id for f in facts} | set(also_events))):
        if not await service.store.settle(c.id, how):
            continue  # another tap settled it meanwhile
        key = (c.platform, c.chat_id, c.audit_id)
        if key in answered:
            await service.store.followed_up(c.id, answered[key])
            continue
        audit_id = await follow_up(owner, c)
        if audit_id is not None:
            sent.append(audit_id)
            answered[key] = audit_id[0]
    return sent


async def _readers_now(owner: OwnerServices, c: Consultation) -> list[Resolved]:
    """Who reads a follow-up in the consultation's chat: the asker of a direct chat; in a group,
    whoever the platform says is in it now (nobody, so no follow-up, when it cannot say)."""
    if c.chat_kind == "direct":
        return readers(owner, c)
    try:
        now = await owner.outbox.readers(c.platform, c.chat_id, c.sender)
    except Exception as exc:  # fail closed: nobody known to read it, nothing sent
        log.warning("followup_readers_failed", consultation=c.id, error=type(exc).__name__)
        return []
    if now is None:
        log.info("followup_readers_unknown", consultation=c.id)
        return []
    return owner.directory.readers(now)


async def _skipped_for_joiners(
    owner: OwnerServices, c: Consultation, now: Sequence[Resolved], events: set[str]
) -> None:
    """A group follow-up not sent because people joined since the question (the readers who
    asked would have heard it): audited, and the owner told who, without the facts' words."""
    joined = [r for r in now if r.identity not in c.audience]
    if c.chat_kind == "direct" or not joined:
        return
    asker = owner.directory.resolve(c.sender).recipient
    then = await owner.engine.answer_about(events, c.question, [r.recipient for r in readers(owner, c)], asker)
    if then.deflected or not any(d.fact.event_id in events for d in then.used):
        return  # the answer kept it from those who asked too: nobody's joining stopped it
    names = [r.label for r in joined]
    record = FollowupSkippedRecord(
        consultation=c.id,
        platform=c.platform,
        chat=c.chat_id,
        chat_kind=c.chat_kind,
        sender=c.sender,
        contact=c.contact,
        question=c.question,
        joined=names,
    )
    await owner.audit.write(record, contact=c.contact)
    await owner.outbox.tell_owner(joined_note(asker.name, c, joined))


async def follow_up(owner: OwnerServices, c: Consultation) -> tuple[str, bool] | None:
    """Answer the question again, now, for everyone who will read it (in a group: who is in the
    chat now, not who was when they asked); send it only if it tells something of the event."""
    audience = await _readers_now(owner, c)
    if not audience:
        return None
    sender = owner.directory.resolve(c.sender)
    recipients = [r.recipient for r in audience]
    # the event the consultation was about, and where its facts are now (a cover story the
    # owner named moved into its truth's event)
    events = {c.event_id} | {f.event_id for fid in c.facts for f in [await owner.memory.get(fid)] if f is not None}
    result = await owner.engine.answer(c.question, recipients, sender.recipient)
    told = [d for d in result.used if d.fact.event_id in events]
    if not told:
        # the event's facts were held back by the composite rule: told together with the open
        # facts the asker already had, they would exceed what the owner allowed (a fact told to
        # the asker alone, L0, beside a fact anyone may know). The follow-up is about the event
        # the owner answered for, so it is answered from that event's facts alone.
        result = await owner.engine.answer_about(events, c.question, recipients, sender.recipient)
        told = [d for d in result.used if d.fact.event_id in events]
    if result.deflected or not told:
        log.info("followup_none", consultation=c.id)
        await _skipped_for_joiners(owner, c, audience, events)
        return None
    text = result.reply
    body: dict[str, Any] = {
        "platform": c.platform,
        "chat": c.chat_id,
        "chat_kind": c.chat_kind,
        "sender": c.sender,
        "contact": c.contact,
        "audience": [r.label for r in audience],
        "question": c.question,
        "consultation": c.id,
        "reply_audit": c.audit_id,
        **result.audit_body(),
    }
    record = await owner.audit.write(
        FollowupRecord.model_validate(body),
        contact=c.contact,
        disclosed=[(d.fact.id, d.fact.event_id) for d in result.used],
        recipients=[r.label for r in audience],
    )
    if owner.consultations is not None:
        await owner.consultations.store.followed_up(c.id, record.id)
    try:
        await owner.outbox.send(c.platform, c.chat_id, text, ())
    except Exception as exc:  # the ledger counts it as not told, or possibly told
        unknown = maybe_delivered(exc)
        await owner.audit.write(
            DeliveryFailedRecord(
                consultation=c.id, audit=record.id, error=type(exc).__name__, outcome=UNKNOWN if unknown else REFUSED
            ),
            contact=c.contact,
        )
        if c.platform == LOCAL.platform and isinstance(exc, LookupError):  # owed: bot/console_followups.py
            log.info("followup_owed", consultation=c.id)
        else:
            log.warning("followup_undelivered", consultation=c.id, error=type(exc).__name__)
        return record.id, False
    return record.id, True
