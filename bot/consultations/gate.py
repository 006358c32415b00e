"""Whether a reply may consult the owner at all (before anything about closed facts is looked at)."""

from __future__ import annotations

from collections.abc import Sequence

from connectors.base import Inbound
from epmem.policy import Resolved
from epmem.reply import ClosedCandidates

from bot.services import OwnerServices


def may_consult(owner: OwnerServices, inbound: Inbound, sender: Resolved, audience: Sequence[Resolved]) -> bool:
    """Whether a reply here may consult the owner at all: consultations are on, not answered as
    the owner, read by contacts only (a stranger only when the owner turned that on); in a group
    only where the platform can say who reads the chat when the follow-up is sent (it is decided
    for everyone then in the chat, ``Outbox.readers``). Only then does anything ask which closed
    facts would answer (``PrivacyEngine.closed_candidates``)."""
    service = owner.consultations
    if service is None or inbound.delegation is not None or not audience:
        return False
    if inbound.chat_kind == "direct":
        if len(audience) != 1:
            return False
    elif not service.config.groups or not owner.outbox.knows_readers(inbound.platform):
        return False
    return service.config.strangers or not any(r.recipient.is_stranger for r in audience)


def consultable(
    owner: OwnerServices,
    inbound: Inbound,
    sender: Resolved,
    audience: Sequence[Resolved],
    candidates: ClosedCandidates,
) -> bool:
    """Whether this reply consults the owner: it may, and closed facts would answer."""
    return bool(candidates) and may_consult(owner, inbound, sender, audience)
