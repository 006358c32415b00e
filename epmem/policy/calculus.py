"""The disclosure calculus of docs/DESIGN.md sec. 3, in code and nowhere else.

Adjudication is never delegated to a model: it is a handful of comparisons in a fixed order, so
it can be property-tested, explained ("rule 4, whitelisted by group family") and run hundreds
of thousands of times a second. Facts are first compiled into :class:`Gate` objects, which fold
the fact's own lists, the policy's exceptions and group membership into two flat maps; the
verdict functions then touch nothing but those maps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Protocol

from epmem.policy.model import STRANGER_ID, Policy, PolicyException


class Judged(Protocol):
    """What adjudication reads of a fact (epmem.memory.facts.Fact is one). The calculus sits
    below memory, so it names the fields it needs instead of importing the fact model."""

    @property
    def id(self) -> str: ...
    @property
    def event_id(self) -> str: ...
    @property
    def category(self) -> str | None: ...
    @property
    def domain(self) -> str | None: ...
    @property
    def whitelist(self) -> list[str]: ...
    @property
    def blacklist(self) -> list[str]: ...
    @property
    def settled_open(self) -> bool: ...
    @property
    def covers(self) -> str | None: ...
    @property
    def undecided(self) -> bool: ...
    @property
    def heard_by(self) -> list[str]: ...
    @property
    def heard_in(self) -> str | None: ...
    def effective_level(self) -> int: ...


@dataclass(frozen=True, slots=True)
class HeardIt:
    """Heard it from you: an undecided fact is open to the contacts who heard it said
    (``Fact.heard_by``), because telling people what they were told reveals nothing to them.
    It opens rules 2-4 like a whitelist entry, so a never-share category and a deny (blacklist,
    a secrecy cue naming them, the owner's exception) still shut it; once the owner has decided
    about the fact, the decision alone counts. The owner may turn it off entirely, for some
    facts or events, or for some contacts (``/heard``)."""

    enabled: bool = True
    off_facts: frozenset[str] = frozenset()
    off_contacts: frozenset[str] = frozenset()

    def listeners(self, fact: Judged) -> list[str]:
        if not self.enabled or not fact.undecided or fact.id in self.off_facts or fact.event_id in self.off_facts:
            return []
        return [c for c in fact.heard_by if c not in self.off_contacts]


HEARD_OFF = HeardIt(enabled=False)


@dataclass(frozen=True, slots=True)
class Recipient:
    """Someone who would read a reply. Strangers are level 4 with no domain."""

    id: str
    level: int
    domain: str | None = None
    name: str = "someone"
    relationship: str = ""

    @property
    def is_stranger(self) -> bool:
        return self.id == STRANGER_ID


STRANGER = Recipient(STRANGER_ID, 4, None, "a stranger", "unknown")


@dataclass(frozen=True, slots=True)
class Gate:
    """A fact compiled for adjudication: its level, domain and the resolved exception maps.

    ``allow`` and ``deny`` map a contact id to the entry that put it there (``whitelist:family``,
    ``exception:3``), so a verdict can say which exception decided it.
    """

    fact_id: str
    level: int
    domain: str | None
    never_share: bool = False
    allow: Mapping[str, str] = field(default_factory=dict)
    deny: Mapping[str, str] = field(default_factory=dict)
    #: contact -> where they heard it said (:class:`HeardIt`). It opens rules 2-4 for the fact
    #: told alone, never as part of a composite: hearing two things said does not make their
    #: combination the owner's to tell, so a composite still needs a decision on every part.
    heard: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    rule: int
    exception: str | None = None

    def explain(self) -> str:
        text = RULE_TEXT[self.rule]
        if self.exception:
            text += f" ({self.exception})"
        return f"{'allow' if self.allowed else 'deny'}: rule {self.rule}, {text}"


RULE_TEXT = {
    0: "never-share category",
    1: "blacklisted",
    2: "level 0 fact",
    3: "domain differs",
    4: "fact deeper than recipient",
    5: "default audience",
}

_DENY_NEVER = Verdict(False, 0)
_DENY = {2: Verdict(False, 2), 3: Verdict(False, 3), 4: Verdict(False, 4)}
_ALLOW_DEFAULT = Verdict(True, 5)


def _judge(gate: Gate, r: Recipient, level: int, domain: str | None, alone: bool = True) -> Verdict:
    """Rules 0-5 with the gate (level, domain) given explicitly, so composites can substitute
    their ceiling while keeping the fact's own never-share flag and exception lists; ``alone``:
    the fact is told by itself (only then does having heard it open it)."""
    if gate.never_share:
        return _DENY_NEVER
    deny = gate.deny.get(r.id)
    if deny is not None:
        return Verdict(False, 1, deny)
    if level == 0:
        rule = 2
    elif domain is not None and r.domain != domain:
        rule = 3
    elif level < r.level:
        rule = 4
    else:
        return _ALLOW_DEFAULT
    allow = gate.allow.get(r.id)
    if allow is None and alone:
        allow = gate.heard.get(r.id)
    if allow is not None:
        return Verdict(True, rule, allow)
    return _DENY[rule]


def judge(gate: Gate, r: Recipient) -> Verdict:
    """One fact, one recipient."""
    return _judge(gate, r, gate.level, gate.domain)


def ceiling(gates: Sequence[Gate]) -> tuple[int, str | None]:
    """The gate of a composite: its deepest level; its one domain; two domains conjoin to L0."""
    level = min(g.level for g in gates)
    domains = {g.domain for g in gates if g.domain is not None}
    if len(domains) > 1:
        return 0, None
    return level, (next(iter(domains)) if domains else None)


@dataclass(frozen=True, slots=True)
class CompositeVerdict:
    allowed: bool
    parts: tuple[tuple[str, Verdict], ...]

    def first_denial(self) -> tuple[str, Verdict] | None:
        """The first fact the composite denies, with why (for the audit's ``held_back``)."""
        return next(((f, v) for f, v in self.parts if not v.allowed), None)


@dataclass(frozen=True, slots=True)
class Composite:
    """Facts told together, with their ceiling computed once for every recipient.

    docs/DESIGN.md sec. 3's composite rule. The reply path (epmem/reply/composite.py) judges the facts
    of every reply as one composite for every reader and holds back what breaks it; the
    benchmarks use it for the permit task (:func:`allowed_set`, benchmarks/pipeline.py).
    """

    gates: tuple[Gate, ...]
    level: int
    domain: str | None

    @classmethod
    def of(cls, gates: Sequence[Gate]) -> Composite:
        if not gates:
            raise ValueError("a composite needs at least one fact")
        level, domain = ceiling(gates)
        return cls(tuple(gates), level, domain)

    def allows(self, r: Recipient) -> bool:
        alone = len(self.gates) == 1
        return all(_judge(g, r, self.level, self.domain, alone).allowed for g in self.gates)


def judge_composite(gates: Sequence[Gate] | Composite, r: Recipient) -> CompositeVerdict:
    """Several facts told together: each judged against the composite's ceiling, with the
    reason per fact (used by the tests; see :class:`Composite` for who calls what)."""
    comp = gates if isinstance(gates, Composite) else Composite.of(gates)
    alone = len(comp.gates) == 1
    parts = tuple((g.fact_id, _judge(g, r, comp.level, comp.domain, alone)) for g in comp.gates)
    return CompositeVerdict(all(v.allowed for _, v in parts), parts)


def allowed_set(gates: Sequence[Gate], recipients: Iterable[Recipient]) -> frozenset[str]:
    """The recipients who may be told these facts together."""
    comp = Composite.of(gates)
    return frozenset(r.id for r in recipients if comp.allows(r))


def audience_allows(gate: Gate, audience: Sequence[Recipient]) -> bool:
    """A reply is read by everyone present: a fact is usable only if each of them may know it."""
    return all(judge(gate, r).allowed for r in audience)


# --------------------------------------------------------------------------- compiling gates


class Rulebook:
    """The policy resolved for adjudication at one moment: groups expanded, expired
    exceptions dropped. Rebuild it when the policy or the exceptions change."""

    def __init__(
        self,
        policy: Policy,
        exceptions: Sequence[PolicyException] = (),
        now: datetime | None = None,
        heard: HeardIt = HeardIt(),
    ) -> None:
        self.policy = policy
        self.heard = heard
        self.now = now or datetime.now(timezone.utc)
        self._groups = {gid: frozenset(members) for gid, members in policy.groups.items()}
        self._recipients = {
            cid: Recipient(cid, c.level, c.domain, c.name, c.relationship) for cid, c in policy.contacts.items()
        }
        self._never = frozenset(name for name, c in policy.categories.items() if c.never_share)
        active = [*policy.exceptions, *exceptions]
        self.exceptions: list[tuple[int, PolicyException]] = [
            (i, e) for i, e in enumerate(active) if e.until is None or _aware(e.until) > self.now
        ]

    def members(self, entry: str) -> frozenset[str]:
        """A group stands for its members; a contact for itself."""
        return self._groups.get(entry, frozenset((entry,)))

    def recipient(self, contact_id: str) -> Recipient:
        return self._recipients.get(contact_id, STRANGER)

    def is_never_share(self, category: str | None) -> bool:
        return category in self._never

    def gate(self, fact: Judged) -> Gate:
        allow: dict[str, str] = {}
        deny: dict[str, str] = {}
        for entry in fact.whitelist:
            for cid in self.members(entry):
                allow.setdefault(cid, f"whitelist:{entry}")
        for entry in fact.blacklist:
            for cid in self.members(entry):
                deny.setdefault(cid, f"blacklist:{entry}")
        for index, exc in self.exceptions:
            kind, target = exc.target()
            value = {"fact": fact.id, "event": fact.event_id, "category": fact.category}[kind]
            if value != target and not (kind == "fact" and exc.effect == "allow" and fact.covers == target):
                # an owner's allow on a truth lets those readers hear its cover too: they may know
                # what it stands for, and a cover heard earlier must not hold back the truth the
                # owner just opened (the composite rule across replies, epmem/reply/cumulative.py)
                continue
            if kind == "category" and exc.effect == "allow" and not fact.settled_open:
                # a closed or pending fact opens only by a decision about it or its event
                continue
            into = allow if exc.effect == "allow" else deny
            for entry in exc.who:
                for cid in self.members(entry):
                    into.setdefault(cid, f"exception:{index}:{exc.effect} {entry} on {kind} {target}")
        heard = {cid: f"heard it in {fact.heard_in or 'a chat with you'}" for cid in self.heard.listeners(fact)}
        return Gate(
            fact_id=fact.id,
            level=fact.effective_level(),
            domain=fact.domain,
            never_share=self.is_never_share(fact.category),
            allow=allow,
            deny=deny,
            heard=heard,
        )


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
