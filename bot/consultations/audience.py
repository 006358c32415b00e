"""Who a consultation is about: the readers of the reply, and the audiences an answer names."""

from __future__ import annotations

from collections.abc import Sequence

from epmem.policy import Resolved

from bot.consultations.store import Consultation
from bot.services import OwnerServices


def name(owner: OwnerServices, who: str) -> str:
    """A contact's name in the policy, else the identity as given."""
    contact = owner.policy.contacts.get(who)
    return contact.name if contact is not None else who


def readers(owner: OwnerServices, c: Consultation) -> list[Resolved]:
    """Who read the reply the consultation is about (the owner left out)."""
    return owner.directory.readers(c.audience)


def like(people: Sequence[Resolved]) -> tuple[int, str | None]:
    """ "Everyone like them": the readers' own circle, the widest trust level among them and
    their domain, or both domains when they are not in one (a stranger's is anyone who asks)."""
    recipients = [r.recipient for r in people]
    if not recipients or any(r.is_stranger for r in recipients):
        return 4, None
    domains = {r.domain for r in recipients}
    return max(r.level for r in recipients), (next(iter(domains)) if len(domains) == 1 else None)


def whitelistable(people: Sequence[Resolved]) -> bool:
    """Everyone who read is a named contact: "tell them" can whitelist each of them."""
    return bool(people) and not any(r.recipient.is_stranger for r in people)


def names(people: Sequence[Resolved], them: str, joiner: str) -> str:
    return joiner.join(r.recipient.name for r in people) if whitelistable(people) else them
