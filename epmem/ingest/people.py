"""Senders -> people: the owner, a policy contact, or an unknown person who is kept, not dropped.

Identity first (``telegram:123``, ``slack:T01/U02``), then a name or alias. Names are good
enough to attribute old messages to a contact in an export; they are never used to decide who
may be told something (that is epmem.policy.directory, identities only), and a name never makes
anyone the owner: only the owner's identities do (the policy's ``owner.identities``, the account
a Telegram export says it belongs to, or one the owner names for an import). Only the owner's
own words open a fact to someone or set a cover (docs/DESIGN.md sec. 6.3, `widening-cue`), so in a group export
another account that calls itself "Sam Rivera" is someone else, kept as an unknown person and
remembered as a look-alike for the import summary. A name does not map to a contact either
when that contact's account on the same platform is known and is another one.
"""

from __future__ import annotations

from collections.abc import Iterable

from epmem.policy.model import OWNER_ID, Policy, iter_identities

UNKNOWN = "unknown:"


class People:
    def __init__(self, policy: Policy | None, owner_identities: Iterable[str] = ()) -> None:
        self._by_identity: dict[str, str] = dict(iter_identities(policy)) if policy else {}
        self._by_name: dict[str, str] = {}
        self._owner_names: set[str] = {OWNER_ID}
        if policy is not None:
            for cid, c in policy.contacts.items():
                for name in (c.name, *c.aliases, cid):
                    self._by_name.setdefault(name.casefold().lstrip("@"), cid)
            self._owner_names.add(policy.owner.name.casefold())
            if policy.owner.name.split():
                self._owner_names.add(policy.owner.name.split()[0].casefold())
        for identity in owner_identities:
            self._by_identity[identity] = OWNER_ID
        self.owner_identities: set[str] = {i for i, who in self._by_identity.items() if who == OWNER_ID}
        #: accounts named like the owner that were not taken for the owner: identity -> name.
        self.lookalikes: dict[str, str] = {}

    def claim_owner(self, identity: str) -> None:
        """An export that says whose it is (Telegram's personal_information) names the owner."""
        self._by_identity[identity] = OWNER_ID
        self.owner_identities.add(identity)
        self.lookalikes.pop(identity, None)

    def known(self, identity: str | None) -> str | None:
        return self._by_identity.get(identity) if identity else None

    def sender(self, key: str, *names: str | None) -> str:
        """A sender as a hand-written export (JSONL, a scenario) gives it: the literal ``owner``
        or one of the owner's identities is the owner; an identity, a contact id or a name
        otherwise (:meth:`resolve`: a name, the owner's included, is never the owner)."""
        if key == OWNER_ID:
            return OWNER_ID
        return self.resolve(key if ":" in key else None, *names, key)

    def resolve(self, identity: str | None, *names: str | None) -> str:
        if identity and identity in self._by_identity:
            return self._by_identity[identity]
        platform = identity.split(":", 1)[0] + ":" if identity else None
        for name in names:
            key = name.casefold().lstrip("@").strip() if name else ""
            if not key:
                continue
            if key in self._owner_names:
                if identity:
                    self.lookalikes.setdefault(identity, str(name))
                continue  # a display name never makes anyone the owner
            who = self._by_name.get(key)
            if who is None:
                continue
            if platform and any(i.startswith(platform) for i, c in self._by_identity.items() if c == who):
                continue  # that contact's account here is known, and this is another one
            return who
        if identity:
            return UNKNOWN + identity
        first = next((n for n in names if n), "someone")
        return UNKNOWN + "name:" + first
