"""Who knows what: the disclosure ledger beside the calculus over today's policy.

One row per fact (or per event), one column per contact, per group and for strangers. A cell
says "told" when the ledger has the fact reaching that reader (with the first date), "may have
been told" when the reply carrying it may have reached them (its delivery is unknown: a
timeout after sending), else "may know" when the disclosure calculus would let the reader be
told now, else "may not know". A reply that was never delivered (refused, discarded) tells
nobody anything (epmem.audit.delivery).
A told fact that the policy no longer allows is flagged: the owner changed their mind after
the fact. A cell decided by an exception (a whitelist, a blacklist, an /allow or /deny) names it.

A group is told when every member was; it may know when every member may (docs/DESIGN.md sec. 3:
a group's allowed set is the intersection of its members').
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from epmem.audit.delivery import POSSIBLY as POSSIBLY_TOLD
from epmem.memory.facts import Fact
from epmem.policy.calculus import STRANGER, Rulebook, Verdict, judge
from epmem.policy.model import STRANGER_ID

TOLD, POSSIBLY, MAY, MAY_NOT = "told", "may have been told", "may know", "may not know"
#: a ledger line: (fact, event, recipient, since, "told" | "possibly told").
LedgerLine = tuple[str, str, str, str, str]


@dataclass(frozen=True, slots=True)
class Cell:
    state: str
    #: first time the reader (every member, for a group) was told, or possibly told; else None.
    told_at: str | None = None
    #: the calculus today (a told fact may have been closed since).
    allowed_now: bool = False
    #: the exception that decided today's verdict (whitelist, blacklist, /allow, /deny), if any.
    exception: str | None = None
    rule: int | None = None
    #: for a group: how many members were told, of how many.
    told_members: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "told_at": self.told_at,
            "allowed_now": self.allowed_now,
            "exception": self.exception,
            "rule": self.rule,
            "told_members": list(self.told_members) if self.told_members else None,
        }


@dataclass(frozen=True, slots=True)
class Column:
    id: str
    label: str
    kind: str  # contact | group | stranger
    members: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    event_id: str
    text: str | None  # None: forgotten (the ledger keeps the id)
    detail: str
    cells: tuple[Cell, ...]
    facts: tuple[str, ...] = field(default=())

    def as_dict(self, columns: Sequence[Column]) -> dict[str, Any]:
        return {
            "id": self.id,
            "event": self.event_id,
            "text": self.text,
            "detail": self.detail,
            "facts": list(self.facts),
            "cells": {c.id: cell.as_dict() for c, cell in zip(columns, self.cells)},
        }


def columns(rulebook: Rulebook) -> list[Column]:
    policy = rulebook.policy
    cols = [
        Column(cid, c.name, "contact", (), f"L{c.level}{' ' + c.domain if c.domain else ''}")
        for cid, c in policy.contacts.items()
    ]
    cols += [Column(gid, gid, "group", tuple(members), "group") for gid, members in policy.groups.items()]
    cols.append(Column(STRANGER_ID, "strangers", "stranger", (), "L4"))
    return cols


Told = tuple[str, str]  # (status, since)


def _told_index(ledger: Iterable[LedgerLine]) -> tuple[dict[str, dict[str, str]], dict[str, set[str]]]:
    """fact id -> reader column -> since, and fact id -> the readers only possibly told it:
    told beats possibly, then the earliest. Plain strings, no tuple per line: this runs over
    the whole ledger on every page, and tuples the garbage collector tracks cost it 3-4 times."""
    told: dict[str, dict[str, str]] = {}
    maybe: dict[str, set[str]] = {}
    for fact_id, _, recipient, time, status in ledger:
        reader = STRANGER_ID if recipient.startswith(f"{STRANGER_ID}(") else recipient
        seen = told.setdefault(fact_id, {})
        was = seen.get(reader)
        if was is None:
            seen[reader] = time
            if status == POSSIBLY_TOLD:
                maybe.setdefault(fact_id, set()).add(reader)
            continue
        possibly = reader in maybe.get(fact_id, ())
        if status != POSSIBLY_TOLD and possibly:
            seen[reader] = time
            maybe[fact_id].discard(reader)
        elif (status == POSSIBLY_TOLD) == possibly and time < was:
            seen[reader] = time
    return told, maybe


def _cell(verdicts: Sequence[Verdict], told: Sequence[Told | None]) -> Cell:
    """``verdicts`` empty: the fact is forgotten, so nobody may be told it any more."""
    allowed = bool(verdicts) and all(v.allowed for v in verdicts)
    exception = next((v.exception for v in verdicts if v.exception), None)
    deciding = next((v for v in verdicts if not v.allowed), verdicts[0]) if verdicts else None
    rule = deciding.rule if deciding is not None else None
    reached = [t for t in told if t is not None]
    members = (sum(t[0] != POSSIBLY_TOLD for t in reached), len(told)) if len(told) > 1 else None
    if told and len(reached) == len(told):
        state = TOLD if all(t[0] != POSSIBLY_TOLD for t in reached) else POSSIBLY
        return Cell(state, max(t[1] for t in reached), allowed, exception, rule, members)
    return Cell(MAY if allowed else MAY_NOT, None, allowed, exception, rule, members)


def fact_row(
    fact: Fact | None,
    fact_id: str,
    event_id: str,
    rulebook: Rulebook,
    cols: Sequence[Column],
    told: Mapping[str, str],
    maybe: AbstractSet[str] = frozenset(),
) -> Row:
    cells = []
    gate = rulebook.gate(fact) if fact is not None else None
    for col in cols:
        readers = list(col.members) if col.kind == "group" else [col.id]
        recipients = [STRANGER if r == STRANGER_ID else rulebook.recipient(r) for r in readers]
        verdicts = [judge(gate, r) for r in recipients] if gate is not None else []
        since = [told.get(r) for r in readers]
        cells.append(
            _cell(
                verdicts,
                [None if t is None else (POSSIBLY_TOLD if r in maybe else "told", t) for r, t in zip(readers, since)],
            )
        )
    if fact is None:
        return Row(fact_id, event_id, None, "forgotten", tuple(cells), (fact_id,))
    detail = (
        f"{fact.version}, {fact.category or 'no category'}, L{fact.effective_level()}"
        + (f", {fact.domain}" if fact.domain else "")
        + (", pending" if fact.state == "pending" else "")
        + (", closed" if fact.closed else "")
    )
    return Row(fact.id, fact.event_id, fact.text, detail, tuple(cells), (fact.id,))


def matrix(
    facts: Sequence[Fact],
    ledger: Iterable[LedgerLine],
    rulebook: Rulebook,
    by_event: bool = False,
    gone: Mapping[str, str] | None = None,
) -> tuple[list[Column], list[Row]]:
    """Rows for ``facts`` and for ``gone`` (fact id -> event id: told, no longer in memory);
    ``gone`` None: every fact the ledger names that is not among ``facts``."""
    cols = columns(rulebook)
    ledger = list(ledger)
    told, maybe = _told_index(ledger)
    if gone is None:
        known = {f.id for f in facts}
        gone = {fid: eid for fid, eid, *_ in ledger if fid not in known}
    ordered = sorted(facts, key=lambda f: (f.event_id, f.version != "truth", f.id))
    rows = [fact_row(f, f.id, f.event_id, rulebook, cols, told.get(f.id, {}), maybe.get(f.id, set())) for f in ordered]
    rows += [
        fact_row(None, fid, eid, rulebook, cols, told.get(fid, {}), maybe.get(fid, set()))
        for fid, eid in sorted(gone.items())
    ]
    return cols, (_by_event(rows, cols) if by_event else rows)


_RANK = {TOLD: 3, POSSIBLY: 2, MAY: 1, MAY_NOT: 0}


def _by_event(rows: Sequence[Row], cols: Sequence[Column]) -> list[Row]:
    """An event is told to a reader when any of its facts was (a cover counts: something of the
    event was said), possibly told when any may have been, and may be known when any may."""
    events: dict[str, list[Row]] = {}
    for r in rows:
        events.setdefault(r.event_id, []).append(r)
    out = []
    for event_id, members in events.items():
        cells = []
        for i, _ in enumerate(cols):
            best = max((m.cells[i] for m in members), key=lambda c: (_RANK[c.state], c.told_at or ""))
            cells.append(best)
        text = next((m.text for m in members if m.text and "truth" in m.detail), None) or next(
            (m.text for m in members if m.text), None
        )
        out.append(
            Row(
                event_id,
                event_id,
                text,
                f"{len(members)} fact{'s' * (len(members) != 1)}",
                tuple(cells),
                tuple(m.id for m in members),
            )
        )
    return out
