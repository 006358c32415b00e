"""What a reader already knows of a matter counts when a reply would tell them more of it.

The composite rule (DESIGN sec. 3) judged per reply alone is weak: asked in two questions, Leo
hears the house offer and the retention bonus although together (the deposit paid with the
bonus) they are L0 and nobody is whitelisted on both. So for each reader of a reply, the facts it
would tell of one matter (an event, or events linked, epmem/memory/links.py) are judged
together with the facts of that matter the reader already knows: what the delegate told them,
or may have told them (the delivery ledger, epmem/audit/delivery.py: a reply whose delivery is
unknown counts, one that was refused or discarded does not). Facts of other matters never
combine across replies: a colleague told about a wedding can still hear a release date.

A window (``EPMEM_COMPOSITE_WINDOW_DAYS``) bounds how far back the ledger counts. A fact the
owner has forgotten since is no longer in memory and cannot be judged; it is left out (the
owner erased it on purpose), and so is a line outside the window.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Protocol

from epmem.audit.log import AuditLog
from epmem.memory.facts import Fact
from epmem.memory.links import EventLinks, Matters
from epmem.policy.calculus import Gate, Rulebook
from epmem.policy.model import STRANGER_ID


@dataclass(frozen=True, slots=True)
class Known:
    """A fact a reader already knows: from which record, since when, and how sure."""

    fact_id: str
    event_id: str
    #: the audit record of the reply that told it.
    record: str
    time: str
    #: ``told`` or ``possibly told`` (the ledger's words).
    status: str


@dataclass(frozen=True, slots=True)
class Prior:
    """A known fact as the composite judges it: compiled against today's rules."""

    gate: Gate
    matter: str
    known: Known


@dataclass(frozen=True, slots=True)
class Earlier:
    """What the readers of one reply already know, by matter (what the composite step reads)."""

    matters: Matters = field(default_factory=lambda: Matters({}))
    #: reader id (a contact id, or ``stranger`` for every stranger together) -> known facts.
    known: Mapping[str, Sequence[Prior]] = field(default_factory=dict)

    def prior(self, reader: str, matter: str, besides: Collection[str]) -> list[Prior]:
        """What ``reader`` knows of ``matter``, other than the facts ``besides``."""
        return [p for p in self.known.get(reader, ()) if p.matter == matter and p.gate.fact_id not in besides]


class Knowledge(Protocol):
    """Where the engine learns which events are one matter and what each reader knows of them."""

    async def matters(self) -> Matters: ...

    async def known(
        self, readers: Collection[str], events: Collection[str], facts: Collection[str] = ()
    ) -> Mapping[str, Sequence[Known]]: ...


def reader_of(recipient: str) -> str:
    """A ledger recipient as the calculus names readers: every ``stranger(identity)`` is ``stranger``
    (fail closed: strangers are judged as one reader knowing what any of them was told)."""
    return STRANGER_ID if recipient.startswith(f"{STRANGER_ID}(") else recipient


class LedgerKnowledge:
    """The delivery ledger (the audit log) and the owner's links, bounded by ``window``."""

    def __init__(
        self,
        audit: AuditLog,
        links: EventLinks,
        window: timedelta | None,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self.audit, self.links, self.window, self.clock = audit, links, window, clock

    async def matters(self) -> Matters:
        return await self.links.matters()

    async def known(
        self, readers: Collection[str], events: Collection[str], facts: Collection[str] = ()
    ) -> Mapping[str, Sequence[Known]]:
        """What ``readers`` were told of these events, and of these facts whichever event they
        were in when told (a fact named a cover story has moved into its truth's event since)."""
        since = (self.clock() - self.window).isoformat(timespec="milliseconds") if self.window else None
        out: dict[str, list[Known]] = {}
        for d in await self.audit.told_of(events, since, facts):
            reader = reader_of(d.recipient)
            if reader in readers:
                out.setdefault(reader, []).append(Known(d.fact_id, d.event_id, d.audit_id, d.time, d.status))
        return out


async def gather(
    knowledge: Knowledge | None,
    chosen: Sequence[Fact],
    readers: Collection[str],
    rulebook: Rulebook,
    lookup: Callable[[Sequence[str]], Awaitable[list[Fact]]],
) -> Earlier:
    """What the readers know of the matters of the facts ``chosen`` for a reply. ``lookup``:
    event ids -> their facts in memory today (FactMemory.by_event)."""
    if knowledge is None or not chosen:
        return Earlier()
    matters = await knowledge.matters()
    events = matters.events(f.event_id for f in chosen)
    facts = {f.id: f for f in await lookup(sorted(events))}
    known = await knowledge.known(readers, events, sorted(facts))
    if not any(known.values()):
        return Earlier(matters)
    out: dict[str, list[Prior]] = {}
    for reader, lines in known.items():
        seen: set[str] = set()
        for k in lines:
            fact = facts.get(k.fact_id)
            if fact is None or k.fact_id in seen:
                continue  # forgotten since (see the module's docstring), or already counted
            seen.add(k.fact_id)
            out.setdefault(reader, []).append(Prior(rulebook.gate(fact), matters.matter(fact.event_id), k))
    return Earlier(matters, out)
