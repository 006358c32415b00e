"""Senders -> people: the owner, a policy contact, or an unknown person who is kept, not dropped.

Identity first (``telegram:123``, ``slack:T01/U02``), then a name or alias. Names are good
enough to attribute old messages in an export; they are never used to decide who may be told
something (that is epmem.policy.directory, identities only).
"""

from __future__ import annotations

from epmem.policy.model import OWNER_ID, Policy, iter_identities

UNKNOWN = "unknown:"


class People:
    def __init__(self, policy: Policy | None) -> None:
        self._by_identity: dict[str, str] = dict(iter_identities(policy)) if policy else {}
        self._by_name: dict[str, str] = {}
        if policy is not None:
            for cid, c in policy.contacts.items():
                for name in (c.name, *c.aliases, cid):
                    self._by_name.setdefault(name.casefold().lstrip("@"), cid)
            self._by_name[policy.owner.name.casefold()] = OWNER_ID
        self._by_name.setdefault(OWNER_ID, OWNER_ID)
        self.owner_identities: set[str] = {i for i, who in self._by_identity.items() if who == OWNER_ID}

    def claim_owner(self, identity: str) -> None:
        """An export that says whose it is (Telegram's personal_information) names the owner."""
        self._by_identity[identity] = OWNER_ID
        self.owner_identities.add(identity)

    def known(self, identity: str | None) -> str | None:
        return self._by_identity.get(identity) if identity else None

    def resolve(self, identity: str | None, *names: str | None) -> str:
        if identity and identity in self._by_identity:
            return self._by_identity[identity]
        for name in names:
            if name and name.casefold().lstrip("@") in self._by_name:
                return self._by_name[name.casefold().lstrip("@")]
        if identity:
            return UNKNOWN + identity
        first = next((n for n in names if n), "someone")
        return UNKNOWN + "name:" + first
