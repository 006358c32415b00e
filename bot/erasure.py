"""Erasing facts for good, one fact at a time (``/forget``) or an owner's whole memory at once
(the owner uninstalled the delegate: bot/serve.py calls it from the Slack connector's hook).

A forgotten fact goes with its vectors, the chat messages it was distilled from (every copy;
the rest of those conversations is re-indexed without them), the exceptions that name it, held
drafts and undelivered messages that would tell it, and open consultations about it. Every
audit record that could carry its words loses its texts (epmem.audit.erase): the audit keeps
the ids, verdicts and who was told, and still verifies, with a chained record of the erasure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from epmem.audit import Erasure, erase_facts
from epmem.ingest import ImportJournal
from epmem.memory import Fact

from bot.services import OwnerServices
from bot.state import WORDED_TABLES

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What one erasure took away, for the owner's answer."""

    facts: list[str]
    turns: int
    revoked: list[int]
    withdrawn: list[str]
    undelivered: list[str]
    audit: Erasure


async def forget_facts(
    owner: OwnerServices, facts: Sequence[Fact], event: str | None, by: str, *, everything: bool = False
) -> Forgotten:
    """``facts`` and everything that carries them (the module doc). ``everything``: the audit
    loses every text, not only those that could carry these facts (the whole memory goes)."""
    ids = sorted(f.id for f in facts)
    await owner.memory.forget(ids)
    sources = sorted({ref for f in facts for ref in f.source_turns})
    turns = await owner.conversations.erase_turns(sources)
    revoked = []
    for number, exc in await owner.overlay.exceptions():
        target_kind, target = exc.target()
        if (target_kind == "fact" and target in ids) or (target_kind == "event" and event and target == event):
            await owner.overlay.revoke(number)
            revoked.append(number)
    withdrawn = await owner.approvals.drop_disclosing(ids)
    if owner.consultations is not None:  # open questions about the facts go, with their words
        await owner.consultations.store.withdraw_naming(ids)
    sentences = [f.text for f in facts]
    undelivered = await owner.deliveries.erase_disclosing(ids, sentences)
    await owner.approvals.erase_texts(ids, sentences)
    await owner.overlay.db.scrub(*WORDED_TABLES)  # held drafts, queued replies, the fact register: state tables
    action = "forget everything" if everything else "forget"
    await owner.record_change(
        {
            "action": action,
            "facts": ids,
            "event": event,
            "source_turns_erased": turns,
            "exceptions_revoked": revoked,
            "approvals_withdrawn": withdrawn,
            "undelivered_erased": undelivered,
            "by": by,
        }
    )
    details = {"event": event} if not everything else {"reason": "the owner's whole memory was erased"}
    erased = await erase_facts(owner.audit, ids, sentences, by=by, details=details, everything=everything)
    return Forgotten(ids, turns, revoked, withdrawn, undelivered, erased)


async def forget_everything(owner: OwnerServices, journal: ImportJournal, by: str) -> Forgotten:
    """The owner's whole memory: every fact as ``/forget`` erases one, every conversation and
    import record, every audit text; the audit chain keeps the ids and says who erased it when."""
    facts = await owner.memory.all()
    forgotten = await forget_facts(owner, facts, None, by, everything=True)
    await owner.conversations.clear()
    await journal.forget_all()
    await owner.overlay.db.scrub(*WORDED_TABLES)
    log.info("owner.erased", facts=len(facts), audit_texts=forgotten.audit.texts)
    return forgotten
