"""The disclosure ledger, checked against the chain: a row deleted or edited by hand is tampering.

The ``disclosures`` table answers "who has been told this fact" in one indexed query, but it is
a table beside the chain: deleting Jamie's rows would make who-knows say Jamie was never told
while ``verify`` still passed. So every record that discloses states, inside its chained body,
what it disclosed to whom (``"ledger": {"facts": [[fact, event], ...], "to": [recipient, ...]}``:
the rows are that product, at the record's time), and verify compares the table with it.

The comparison is one pass, never quadratic: each row is hashed and the hashes are summed
(modulo 2**256) with a count, on the records' side while the chain is walked and on the table's
side in one indexed join, so any row deleted, added, edited or duplicated changes the sum. Only
when they differ is the table walked again beside the records to name the first bad row.

Records written before the ledger was chained carry no such field; their rows are sealed once,
when the database is opened by a version that knows (a chained ``ledger_seal`` record holding
their count and sum, like the format-1 seal of :mod:`epmem.audit.schema`), and are checked
against that seal from then on.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from epmem.audit.kinds import LedgerSealRecord
from epmem.audit.record import AuditRecord, ChainSource
from epmem.audit.sealing import canonical, chain_hash
from epmem.audit.schema import FORMAT, GENESIS, outcome
from epmem.db import Database, Dialect

LEDGER_KEY = "ledger"
SEAL_KIND = LedgerSealRecord.kind
_MOD = 1 << 256


def _legacy(dialect: Dialect) -> str:
    """A row of a record that states no ledger, from before the seal: checked against the seal."""
    return f"(a.seq <= ? AND {dialect.json_missing('a.body', LEDGER_KEY)})"


Row = tuple[str, str, str, str, str]  # audit id, fact, event, recipient, time


def ledger_body(disclosed: Iterable[tuple[str, str]], recipients: Sequence[str]) -> dict[str, Any] | None:
    """What a record states it disclosed, for its body; None when it disclosed nothing."""
    facts = [[f, e] for f, e in disclosed]
    if not facts or not recipients:
        return None
    return {"facts": facts, "to": list(recipients)}


def rows_of(record_id: str, time: str, body: dict[str, Any]) -> list[Row]:
    """The ledger rows a record's chained body says exist."""
    ledger = body.get(LEDGER_KEY)
    if not isinstance(ledger, dict):
        return []
    return [
        (record_id, str(f), str(e), str(r), time) for f, e in ledger.get("facts") or [] for r in ledger.get("to") or []
    ]


def row_hash(row: Row) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(row).encode()).digest(), "big")


@dataclass(slots=True)
class Tally:
    """An order-free digest of a multiset of rows: their count and the sum of their hashes."""

    count: int = 0
    total: int = 0

    def add(self, row: Row) -> None:
        self.count += 1
        self.total = (self.total + row_hash(row)) % _MOD

    @property
    def digest(self) -> str:
        return f"{self.total:064x}"

    def matches(self, other: Tally) -> bool:
        return self.count == other.count and self.total == other.total


@dataclass(slots=True)
class LedgerCheck:
    """What the walk gathers (the records' side) and the table's side, range by range."""

    expected: Tally = field(default_factory=Tally)
    actual: Tally = field(default_factory=Tally)
    #: the seal over rows of records from before the ledger was chained: (upto seq, count, digest).
    seal: tuple[int, int, str] | None = None
    seal_record: AuditRecord | None = None
    legacy: Tally = field(default_factory=Tally)

    def walk(self, rec: AuditRecord) -> None:
        for row in rows_of(rec.id, rec.time, rec.body):
            self.expected.add(row)
        if rec.kind == SEAL_KIND and self.seal is None:
            b = rec.body
            self.seal = (int(b.get("upto") or 0), int(b.get("rows") or 0), str(b.get("digest") or ""))
            self.seal_record = rec

    async def read_table(self, db: Database, after: int, upto: int) -> None:
        """The table's rows of the records in (after, upto], in one indexed join."""
        sql = (
            f"SELECT {_legacy(db.dialect)} AS legacy, d.audit_id, d.fact_id, d.event_id, d.recipient, d.time "
            "FROM audit a JOIN disclosures d ON d.audit_id = a.id WHERE a.seq > ? AND a.seq <= ?"
        )
        legacy_upto = self.seal[0] if self.seal else 0
        async for legacy, *row in db.iterate(sql, (legacy_upto, after, upto)):
            (self.legacy if legacy else self.actual).add(tuple(row))

    async def problem(self, log: ChainSource, full: bool) -> tuple[AuditRecord | None, str] | None:
        """None when the table and the chain agree; else the record and what is wrong."""
        if self.seal is not None:
            _, count, digest = self.seal
            if self.legacy.count != count or self.legacy.digest != digest:
                return self.seal_record, (
                    f"disclosure ledger: the {count} rows sealed for records before the ledger "
                    f"was chained are now {self.legacy.count}, or were edited"
                )
        if full:
            orphan = await _orphan(log.db)
            if orphan is not None:
                return None, (
                    f"disclosure ledger: row (fact {orphan[1]}, recipient {orphan[3]}) names record "
                    f"{orphan[0]}, which does not exist"
                )
        if self.expected.matches(self.actual):
            return None
        found = await locate(log, self.seal[0] if self.seal else 0)
        return found or (None, "disclosure ledger: its rows do not match what the records disclosed")


async def _orphan(db: Database) -> tuple[str, ...] | None:
    sql = (
        "SELECT audit_id, fact_id, event_id, recipient FROM disclosures "
        "WHERE audit_id NOT IN (SELECT id FROM audit) LIMIT 1"
    )
    row = await db.fetchone(sql)
    return tuple(row) if row else None


def _describe(row: Row) -> str:
    return f"(fact {row[1]}, recipient {row[3]})"


#: a row's fields as a change names them (the record's id is the record named beside it).
_FIELDS = (("fact", 1), ("event", 2), ("recipient", 3), ("time", 4))


def _changed(row: Row, extra: Counter[Row]) -> str:
    """``row`` became the extra row most like it: which of its fields changed, from what to what."""
    edited = max(extra, key=lambda x: sum(x[i] == row[i] for _, i in _FIELDS))
    changes = "; ".join(
        f"its {name} was changed from {row[i]} to {edited[i]}" for name, i in _FIELDS if row[i] != edited[i]
    )
    return f"row {_describe(row)}: {changes}"


async def locate(log: ChainSource, legacy_upto: int) -> tuple[AuditRecord, str] | None:
    """The first record whose rows in the table differ from what it says it disclosed. A walk
    of the records beside the table's rows in the same order: only run once the sums differ."""
    sql = (
        "SELECT a.seq, d.audit_id, d.fact_id, d.event_id, d.recipient, d.time FROM audit a "
        f"JOIN disclosures d ON d.audit_id = a.id WHERE NOT {_legacy(log.db.dialect)} ORDER BY a.seq"
    )
    table = [(int(r[0]), tuple(r[1:])) for r in await log.db.fetchall(sql, (legacy_upto,))]
    i = 0
    async for rec in log.stream():
        if rec.seq <= legacy_upto and LEDGER_KEY not in rec.body:
            continue
        have: Counter[Row] = Counter()
        while i < len(table) and table[i][0] < rec.seq:
            i += 1  # rows of records the stream skipped cannot exist (same join); defensive
        while i < len(table) and table[i][0] == rec.seq:
            have[table[i][1]] += 1
            i += 1
        want = Counter(rows_of(rec.id, rec.time, rec.body))
        missing, extra = want - have, have - want
        if missing and extra:
            return rec, f"disclosure ledger: {_changed(next(iter(missing)), extra)}"
        if missing:
            return rec, f"disclosure ledger: row {_describe(next(iter(missing)))} is missing"
        if extra:
            return rec, f"disclosure ledger: row {_describe(next(iter(extra)))} was not disclosed by this record"
    return None


async def seal_legacy_ledger(db: Database, now: str, new_id: str) -> int:
    """Once per database, after migration 4: seal the rows of the records written before the
    ledger was chained, in a chained record; return how many rows (0: nothing to seal)."""
    async with db.transaction():
        row = await db.fetchone("SELECT upto FROM ledger_legacy")
        if row is None:
            return 0
        upto = int(row[0])
        tally = Tally()
        sql = (
            "SELECT d.audit_id, d.fact_id, d.event_id, d.recipient, d.time FROM audit a "
            f"JOIN disclosures d ON d.audit_id = a.id WHERE {_legacy(db.dialect)}"
        )
        async for r in db.iterate(sql, (upto,)):
            tally.add(tuple(r))
        if tally.count:
            body = LedgerSealRecord(
                action="seal the disclosure ledger", upto=upto, rows=tally.count, digest=tally.digest
            ).body()
            last = await db.fetchone("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1")
            prev = last[0] if last else GENESIS
            h = chain_hash(prev, canonical(new_id, now, SEAL_KIND, "owner", body))
            await db.execute(
                "INSERT INTO audit(id, time, kind, contact, body, prev_hash, hash, format, outcome) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (new_id, now, SEAL_KIND, "owner", json_dumps(body), prev, h, FORMAT, outcome(SEAL_KIND, body)),
            )
        await db.execute("DELETE FROM ledger_legacy")
    return tally.count


def json_dumps(body: dict[str, Any]) -> str:
    import json

    return json.dumps(body, ensure_ascii=False)
