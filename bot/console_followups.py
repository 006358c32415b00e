"""Follow-ups owed to a console contact: the owner answered a consultation while the contact's
console session was closed (one process holds a data folder, so it always is).

On Telegram or Slack the follow-up goes out when the owner answers. On the console it cannot:
the follow-up is audited, its delivery fails (``delivery_failed``, so the ledger does not count
it as told), and the contact gets it when they next open a session (``epmem chat --as ID``),
answered again then (bot/consultations/followup.py ``follow_up``: what the policy allows at that moment).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from connectors.base import Action
from epmem.identity import LOCAL

from bot.consultations import Consultation, follow_up
from bot.services import OwnerServices

Show = Callable[[str], Awaitable[None]]


async def owed(owner: OwnerServices, identity: str) -> list[Consultation]:
    """The answered consultations of ``identity`` whose follow-up the console did not deliver."""
    service = owner.consultations
    if service is None:
        return []
    answered = await service.store.answered_for(LOCAL.platform, identity)
    if not answered:
        return []
    failed = {
        r.body.get("audit")
        for c in {a.contact for a in answered}
        for r in await owner.audit.records(contact=c, kind="delivery_failed")
    }
    return [c for c in answered if c.followup_audit in failed]


async def deliver_owed(owner: OwnerServices, identity: str, show: Show) -> int:
    """Answer each owed question again now and show it in the contact's session; how many were."""
    delivered = 0

    async def send(chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        if chat_id != identity:
            raise LookupError(f"{chat_id} has no console session open")
        await show(text)

    owner.outbox.attach(LOCAL.platform, send)
    try:
        for c in await owed(owner, identity):
            sent = await follow_up(owner, c)
            delivered += bool(sent and sent[1])
    finally:
        owner.outbox.detach(LOCAL.platform)
    return delivered
