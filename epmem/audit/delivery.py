"""What became of each reply, and the disclosure ledger that follows from it.

A reply's decision record (and its ledger lines) is written *before* the reply leaves, so a
crash between the two can never leave a disclosure unrecorded. What happened next is told by
later records that name the decision (``of``): ``delivery`` (the platform took it, perhaps on
``/resend``), ``undelivered`` (it refused, or the courier gave up; or, with ``outcome``
"unknown", it timed out after sending and may have been read), ``delivery_failed`` (a held
reply the owner approved that did not go out) and the owner's ``/discard``. The chain stays
append-only: an outcome is a new record, never an edit of the decision.

How a ledger line counts, per reply decision:

* a ``delivered`` outcome: **told**, from the first such record (a /resend counts from then);
* else an ``unknown`` outcome: **possibly told** (fail closed: a later /discard does not undo
  what the platform may already have shown), which every composite check must count as known;
* else ``refused`` or ``discarded``: **not told**;
* no outcome at all: **told** at the decision (a reply in flight, an older database, or a
  connector that does not report: assume the worst).

``delivery`` is an index of the chained records (like ``audit_fact``), written in the same
transaction as the record it indexes, and rebuilt from the records by the schema migration.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from epmem.db import Database

DELIVERED, REFUSED, UNKNOWN, DISCARDED = "delivered", "refused", "unknown", "discarded"
OUTCOMES = (DELIVERED, REFUSED, UNKNOWN, DISCARDED)
TOLD, POSSIBLY = "told", "possibly told"

#: the owner's /discard, audited as a policy change naming the reply (``of``).
DISCARD_ACTION = "discard_undelivered"
_BATCH = 500  # ids per query (SQLite bounds the number of parameters)


def delivery_of(kind: str, body: dict[str, Any]) -> tuple[str, str] | None:
    """(the reply decision's audit id, outcome) when this record says what became of a reply."""
    if kind in ("delivery", "undelivered"):
        of = body.get("of")
        if kind == "undelivered" and body.get("kind", "reply") != "reply":
            return None  # a note to the owner names the reply it was about, not a delivery of it
    elif kind == "delivery_failed":
        of = body.get("audit")
    elif kind == "policy_change" and body.get("action") == DISCARD_ACTION:
        of = body.get("of")
        return (of, DISCARDED) if isinstance(of, str) else None
    else:
        return None
    if not isinstance(of, str):
        return None
    stated = body.get("outcome")
    if stated in OUTCOMES:
        return of, str(stated)
    return of, DELIVERED if body.get("delivered") is True else REFUSED


async def index_delivery(db: Database, seq: int, kind: str, body: dict[str, Any], time: str) -> None:
    """Index one record's delivery outcome (inside the caller's transaction)."""
    found = delivery_of(kind, body)
    if found is not None:
        await db.execute(
            "INSERT INTO delivery(seq, of, outcome, time) VALUES (?,?,?,?) ON CONFLICT(seq) DO UPDATE SET "
            "of = excluded.of, outcome = excluded.outcome, time = excluded.time",
            (seq, found[0], found[1], time),
        )


@dataclass(slots=True)
class Fate:
    """Everything the outcome records say about one reply decision."""

    delivered_at: str | None = None
    unknown: bool = False
    settled: bool = False

    def add(self, outcome: str, time: str) -> None:
        self.settled = True
        if outcome == DELIVERED and (self.delivered_at is None or time < self.delivered_at):
            self.delivered_at = time
        self.unknown = self.unknown or outcome == UNKNOWN

    def merge(self, other: Fate) -> None:
        if other.delivered_at is not None:
            self.add(DELIVERED, other.delivered_at)
        self.unknown = self.unknown or other.unknown
        self.settled = self.settled or other.settled

    def status(self, decided_at: str) -> tuple[str, str] | None:
        """(told | possibly told, since when) for a ledger line of this reply; None: not told."""
        if self.delivered_at is not None:
            return TOLD, max(self.delivered_at, decided_at)
        if self.unknown:
            return POSSIBLY, decided_at
        return None if self.settled else (TOLD, decided_at)


async def has_index(db: Database) -> bool:
    """False on a database no bot has opened since this index came (the read-only audit page
    then counts every line as told, as before: never fewer readers than there may be)."""
    return await db.table_exists("delivery")


async def fates(db: Database, audit_ids: Iterable[str] | None = None, after: int = 0) -> tuple[dict[str, Fate], int]:
    """The fate of each reply named by an outcome record after seq ``after`` (of ``audit_ids``
    only, when given); and the last seq read."""
    out: dict[str, Fate] = {}
    last = after
    if not await has_index(db):
        return out, last
    sql = "SELECT seq, of, outcome, time FROM delivery WHERE seq > ?"
    if audit_ids is None:
        batches: list[list[str]] = [[]]
    else:
        wanted = sorted(set(audit_ids))
        batches = [wanted[i : i + _BATCH] for i in range(0, len(wanted), _BATCH)]
    for batch in batches:
        query = sql + (f" AND of IN ({','.join('?' * len(batch))})" if audit_ids is not None else "")
        async for seq, of, outcome, time in db.iterate(query + " ORDER BY seq", [after, *batch]):
            out.setdefault(of, Fate()).add(outcome, time)
            last = max(last, seq)
    return out, last


class Ledger:
    """(fact, reader) -> first time told (or possibly told), kept up to date incrementally.

    New ledger lines and new outcome records are read by rowid / seq since the last refresh;
    only the (fact, reader) pairs of replies that changed are recomputed, so a page view costs
    what changed, not the whole history (the audit page reads this on every who-knows view).
    """

    def __init__(self) -> None:
        self._lines: dict[tuple[str, str], list[tuple[str, str, str]]] = {}  # pair -> (audit, event, time)
        self._pairs_of: dict[str, set[tuple[str, str]]] = {}
        self._fates: dict[str, Fate] = {}
        self._best: dict[tuple[str, str], tuple[str, str, str]] = {}  # pair -> (event, time, status)
        self._rowid = 0
        self._seq = 0

    async def refresh(self, db: Database) -> list[tuple[str, str, str, str, str]]:
        """(fact, event, reader, since, told | possibly told), one per pair someone may know."""
        dirty: set[tuple[str, str]] = set()
        sql = (
            "SELECT rowid, audit_id, fact_id, event_id, recipient, time FROM disclosures WHERE rowid > ? ORDER BY rowid"
        )
        async for rowid, audit_id, fact, event, reader, moment in db.iterate(sql, (self._rowid,)):
            pair = (fact, reader)
            self._lines.setdefault(pair, []).append((audit_id, event, moment))
            self._pairs_of.setdefault(audit_id, set()).add(pair)
            dirty.add(pair)
            self._rowid = rowid
        changed, self._seq = await fates(db, after=self._seq)
        for audit_id, fate in changed.items():
            self._fates.setdefault(audit_id, Fate()).merge(fate)
            dirty |= self._pairs_of.get(audit_id, set())
        for pair in dirty:
            self._recompute(pair)
        return [(fact, event, reader, since, status) for (fact, reader), (event, since, status) in self._best.items()]

    def _recompute(self, pair: tuple[str, str]) -> None:
        lines = []
        for audit_id, event, moment in self._lines.get(pair, ()):
            found = self._fates.get(audit_id, Fate()).status(moment)
            if found is not None:
                lines.append((*found, event))
        if lines:
            status, since, event = min(lines, key=rank)
            self._best[pair] = (event, since, status)
        else:
            self._best.pop(pair, None)


def rank(line: Sequence[str]) -> tuple[bool, str]:
    """Of several (status, since, ...) for one reader: told beats possibly told; then the earliest."""
    return line[0] != TOLD, line[1]
