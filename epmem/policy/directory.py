"""Who is asking: platform identity -> the owner, a contact, or a stranger.

Only identities decide. Display names and usernames are chosen by the sender and can be set
to anything, including the owner's own name, so they never take part in resolution.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from epmem.identity import LOCAL
from epmem.policy.calculus import STRANGER, Recipient
from epmem.policy.holder import PolicyHolder, ReadsPolicy
from epmem.policy.model import OWNER_ID, STRANGER_ID, Policy, iter_identities

#: the local id that stands for "somebody the policy does not know" (`epmem chat --as stranger`).
UNKNOWN_STRANGER = "unknown-stranger"


@dataclass(frozen=True, slots=True)
class Resolved:
    identity: str
    contact_id: str  # "owner", a contact id, or "stranger"
    recipient: Recipient

    @property
    def is_owner(self) -> bool:
        return self.contact_id == OWNER_ID

    @property
    def label(self) -> str:
        """For audit and ledger: strangers are told apart by their identity."""
        return f"stranger({self.identity})" if self.contact_id == STRANGER_ID else self.contact_id


class Directory(ReadsPolicy):
    """Identity -> contact over the holder's current policy; the index is rebuilt when a
    refresh replaces the policy (a /link must be heard by the very next message)."""

    def __init__(self, policy: Policy | PolicyHolder) -> None:
        self._policy = PolicyHolder.of(policy)
        self._indexed: Policy | None = None
        self._by_identity: dict[str, str] = {}
        self._recipients: dict[str, Recipient] = {}

    def _index(self) -> None:
        policy = self.policy
        if policy is self._indexed:
            return
        by_identity = dict(iter_identities(policy))
        # every contact can be addressed on the local terminal by its id (`epmem chat --as ID`)
        for cid in policy.contacts:
            by_identity.setdefault(LOCAL.identity(cid), cid)
        by_identity.setdefault(LOCAL.identity(OWNER_ID), OWNER_ID)
        self._by_identity = by_identity
        self._recipients = {
            cid: Recipient(cid, c.level, c.domain, c.name, c.relationship) for cid, c in policy.contacts.items()
        }
        self._indexed = policy

    def resolve(self, identity: str) -> Resolved:
        self._index()
        cid = self._by_identity.get(identity, STRANGER_ID)
        if cid == OWNER_ID:
            return Resolved(identity, OWNER_ID, Recipient(OWNER_ID, 0, None, self.policy.owner.name, "owner"))
        return Resolved(identity, cid, self._recipients.get(cid, STRANGER))

    def readers(self, identities: Iterable[str]) -> list[Resolved]:
        """Who reads a message among these identities: each once, in order, the owner left out
        (the owner may know it all)."""
        return [r for r in map(self.resolve, dict.fromkeys(identities)) if not r.is_owner]

    def contact_identity(self, contact_id: str) -> str:
        """An identity that resolves to this contact (for previews and the benchmark)."""
        if contact_id == STRANGER_ID:
            return LOCAL.identity(UNKNOWN_STRANGER)
        if contact_id != OWNER_ID and contact_id not in self.policy.contacts:
            raise KeyError(contact_id)
        return LOCAL.identity(contact_id)

    def find_contact(self, token: str) -> str | None:
        """A contact id from an id, a name or an alias (owner commands are typed by people)."""
        if token in self.policy.contacts or token in self.policy.groups:
            return token
        wanted = token.casefold()
        for cid, c in self.policy.contacts.items():
            if c.name.casefold() == wanted or any(a.casefold() == wanted for a in c.aliases):
                return cid
        return None
