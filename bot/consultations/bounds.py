"""How often the owner may be asked: the bounds on consultations, and what happens past them.

Someone asking about everything must not flood the owner (issue 38). Before a consultation
asks the owner, these bounds are checked (``EPMEM_CONSULT_*``, bot/config.py; README
"Consultations"):

* **open, per contact**: at most ``max_open_per_asker`` (3) open at once per contact, all of
  its identities together (the policy's identities and linked accounts resolve to one contact);
  all strangers together at most ``strangers_max_open`` (2): a fresh account costs nothing.
* **per day, per contact**: at most ``per_day`` (5) consultations that asked the owner in the
  last 24 hours per contact, whatever became of them (answered, open or expired); all strangers
  together ``strangers_per_day`` (3); and the owner in all ``owner_per_day`` (20).
* **not again after expiry**: an event whose consultation expired unanswered is not asked about
  again for ``reask_after`` (7 days); after that a new question may ask again, within the bounds
  above (the expired one still counts toward its day).
* **kept private is kept private**: the owner is not asked about news they kept private from
  these readers already, stored in another event (the same news from another chat or import:
  the embedder's cosine at least :data:`~epmem.ingest.SAME_NEWS`, as epmem/ingest/twins.py).

Each bound counts the owner's messages, not events: one message that asks about several events
of one question (``ConsultConfig.per_message``, each event its own row and buttons) is one
consultation, open while any of its events waits. A question that joins an open consultation
of the same event costs the owner nothing (one note for the event): only the open bound holds
it. What was not asked is audited (``consultation_skipped``: who, why, the event and its facts'
ids, the topic) and the daily digest lists it by asker and topic, without the facts' words
(bot/digest.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import structlog

from connectors.base import Inbound
from epmem.audit import ConsultationSkippedRecord
from epmem.ingest import SAME_NEWS
from epmem.memory import Fact
from epmem.policy import Resolved, audience_allows

from bot.consultations.store import ConsultationStore
from bot.services import OwnerServices

log = structlog.get_logger(__name__)

DAY = timedelta(days=1)


async def refusal(
    store: ConsultationStore, event_id: str, contact_id: str | None, batch: str | None = None
) -> str | None:
    """Why a consultation of ``event_id`` for this contact (None: a stranger) may not ask the
    owner now, or None when it may. ``batch``: the message it would join, already counted (a
    further event of one message costs no bound the first one passed)."""
    cfg, now = store.config, store.clock()
    stranger = contact_id is None
    if await store.open_count(contact_id, batch) >= (cfg.strangers_max_open if stranger else cfg.max_open_per_asker):
        return "open"
    if await store.has_lead(event_id):
        return None  # joins the note already sent
    day = cfg.strangers_per_day if stranger else cfg.per_day
    if await store.asked_since(now - DAY, contact_id, besides=batch) >= day:
        return "day"
    if await store.asked_since(now - DAY, everyone=True, besides=batch) >= cfg.owner_per_day:
        return "owner-day"
    if await store.expired_since(event_id, now - cfg.reask_after):
        return "expired"
    return None


async def _news_elsewhere(owner: OwnerServices, fact: Fact) -> list[Fact]:
    """The same news as ``fact`` stored in other events (the embedder's cosine at least
    :data:`~epmem.ingest.SAME_NEWS`), nearest first."""
    rows = await owner.memory.similar([fact.text], limit=8)
    return [
        twin
        for twin, score in (rows[0] if rows else [])
        if twin.id != fact.id and twin.event_id != fact.event_id and score >= SAME_NEWS
    ]


async def kept_private(owner: OwnerServices, fact: Fact, readers: Sequence[Resolved]) -> Fact | None:
    """The same news in another event that the owner decided these readers may not know, if any."""
    rulebook = await owner.engine.rulebook()
    audience = [r.recipient for r in readers]
    for twin in await _news_elsewhere(owner, fact):
        if (
            twin.state == "owner-set"
            and twin.version == fact.version
            and not audience_allows(rulebook.gate(twin), audience)
        ):
            return twin
    return None


async def same_news(owner: OwnerServices, fact: Fact, shown: Sequence[Fact]) -> bool:
    """``fact`` is news one of ``shown`` (other events of the same message) already tells, in
    other words (cosine at least :data:`~epmem.ingest.SAME_NEWS`): one message asks about it once."""
    events = {f.event_id for f in shown} - {fact.event_id}
    return bool(events) and any(twin.event_id in events for twin in await _news_elsewhere(owner, fact))


async def check(
    owner: OwnerServices,
    store: ConsultationStore,
    fact: Fact,
    sender: Resolved,
    readers: Sequence[Resolved],
    batch: str | None = None,
) -> str | None:
    """Why the owner may not be asked about ``fact`` for this asker now (the bounds, then the
    same news kept private already), or None; ``batch``: the message it would be asked in."""
    contact_id = None if sender.recipient.is_stranger else sender.contact_id
    reason = await refusal(store, fact.event_id, contact_id, batch)
    if reason is None and (twin := await kept_private(owner, fact, readers)) is not None:
        reason = f"kept-private:{twin.id}"
    return reason


async def record_skip(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    fact: Fact,
    facts: Sequence[str],
    topic: str,
    reason: str,
    audit_id: str,
) -> None:
    """Audit a consultation the bounds kept from the owner (the digest lists it)."""
    asker = sender.identity if sender.recipient.is_stranger else sender.contact_id
    await owner.audit.write(
        ConsultationSkippedRecord(
            platform=inbound.platform,
            chat=inbound.chat_id,
            sender=inbound.sender,
            contact=sender.label,
            reason=reason,
            asker=asker,
            stranger=sender.recipient.is_stranger,
            event=fact.event_id,
            facts=list(facts),
            topic=topic,
            reply_audit=audit_id,
        ),
        contact=sender.label,
    )
    log.info("consultation_skipped", contact=sender.label, reason=reason.split(":")[0])
