"""Walking the chain: every link, every hash, every text against its digest, every erasure.

A record is good when it links to the one before, its hash covers its skeleton (format 2) or
its full body while its texts are there (format 1, whose skeleton the seal chain covers), every
text still present matches its salted digest, and every text that is gone was erased by a
chained erasure record. Deleting a text by hand, without that record, is tampering like any other.
So is deleting, adding or editing a row of the disclosure ledger: its rows must be exactly those
the records say they disclosed (:mod:`epmem.audit.ledger`), checked in the same pass.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from epmem.audit.kinds import ErasureRecord
from epmem.audit.ledger import LedgerCheck
from epmem.audit.record import AuditRecord, ChainSource
from epmem.audit.sealing import canonical, chain_hash, digest, markers
from epmem.audit.schema import GENESIS, LEGACY_FORMAT, MIGRATION_KIND, seal_step

ERASURE_KIND = ErasureRecord.kind


@dataclass(frozen=True, slots=True)
class ChainStatus:
    """``verified`` records verify, in order from the first; ``first_bad`` is where it stops."""

    verified: int
    total: int
    first_bad: AuditRecord | None = None
    reason: str | None = None
    head_seq: int = 0
    head_hash: str = GENESIS
    erased_records: int = 0
    #: False while a first walk is still under way (``verified`` is its progress so far).
    complete: bool = True

    @property
    def ok(self) -> bool:
        return self.first_bad is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "complete": self.complete,
            "verified": self.verified,
            "total": self.total,
            "head_seq": self.head_seq,
            "head_hash": self.head_hash,
            "erased_records": self.erased_records,
            "first_bad": None
            if self.first_bad is None
            else {"id": self.first_bad.id, "seq": self.first_bad.seq, "reason": self.reason},
        }


def _texts_problem(rec: AuditRecord) -> str | None:
    erased = {e.slot for e in rec.erased}
    slots = set()
    for slot, want in markers(rec.skeleton):
        slots.add(slot)
        salt, text = rec.stored.get(slot, (None, None))
        if text is None:
            if slot not in erased:
                return f"text {slot!r} is missing and no erasure removed it"
        elif salt is None or digest(salt, text) != want:
            return f"text {slot!r} does not match its digest"
    extra = set(rec.stored) - slots
    return f"text {sorted(extra)[0]!r} has no place in the record" if extra else None


class _Walk:
    def __init__(self) -> None:
        self.prev = GENESIS
        self.seal = GENESIS
        self.legacy = 0
        self.listed: set[str] = set()
        self.erased: list[tuple[int, AuditRecord]] = []
        self.first_bad_id: str | None = None
        self.ledger = LedgerCheck()

    def problem(self, rec: AuditRecord) -> str | None:
        if rec.prev_hash != self.prev:
            return "does not link to the record before it"
        bad = _texts_problem(rec)
        if bad:
            return bad
        if rec.format == LEGACY_FORMAT:
            self.seal = seal_step(self.seal, rec.hash, rec.canonical())
            self.legacy += 1
            if rec.seal != self.seal:
                return "its seal does not match (format-1 record changed after it was carried forward)"
            if (
                not rec.erased
                and chain_hash(rec.prev_hash, canonical(rec.id, rec.time, rec.kind, rec.contact, rec.body)) != rec.hash
            ):
                return "hash does not match its content"
        elif rec.compute_hash() != rec.hash:
            return "hash does not match its content"
        if rec.kind == MIGRATION_KIND:
            if rec.body.get("seal") != self.seal or rec.body.get("sealed") != self.legacy:
                return "the seal of the format-1 records does not match"
            if rec.body.get("first_bad") and self.first_bad_id is None:
                self.first_bad_id = str(rec.body["first_bad"])
        if rec.kind == ERASURE_KIND:
            self.listed.update(str(x) for x in rec.body.get("records") or [])
        self.ledger.walk(rec)
        return None


class ChainWatcher:
    """Verifies incrementally: each call walks only the records appended since the last one.

    For the audit page, whose banner must not re-hash 100k records per request. A texts-only
    erasure touches records already walked; :meth:`reset` (the page does it periodically)
    walks everything again."""

    def __init__(self) -> None:
        self.reset()

    @property
    def progress(self) -> int:
        return self._n

    def reset(self) -> None:
        self._walk = _Walk()
        self._n = 0
        self._last: AuditRecord | None = None
        self._bad: ChainStatus | None = None

    async def advance(self, log: ChainSource) -> ChainStatus:
        if self._bad is not None:
            return self._bad
        walk = self._walk
        after = self._last.seq if self._last is not None else 0
        ledger_from = after
        async for rec in log.stream(after=after):
            if self._n % 200 == 0:
                await asyncio.sleep(0)  # a long walk must not starve the page it runs beside
            reason = walk.problem(rec)
            if reason is not None:
                self._bad = ChainStatus(self._n, await _total(log), rec, reason, *_head(self._last), len(walk.erased))
                return self._bad
            if rec.erased:
                walk.erased.append((self._n, rec))
            walk.prev, self._last, self._n = rec.hash, rec, self._n + 1
        n = self._n
        # the ledger's rows of the records just walked (an incremental walk sees rows deleted
        # from older records at the next full walk: reset(), every few minutes on the page)
        await walk.ledger.read_table(log.db, ledger_from, self._last.seq if self._last is not None else 0)
        wrong = await walk.ledger.problem(log, full=ledger_from == 0)
        if wrong is not None:
            bad_rec, why = wrong
            self._bad = ChainStatus(n, n, bad_rec or self._last, why, *_head(self._last), len(walk.erased))
            return self._bad
        for index, rec in walk.erased:
            if rec.id not in walk.listed:
                return ChainStatus(
                    index,
                    n,
                    rec,
                    "texts were removed without a chained erasure record",
                    *_head(self._last),
                    len(walk.erased),
                )
        if walk.first_bad_id is not None:
            bad = await log.get(walk.first_bad_id)
            if bad is not None:
                return ChainStatus(
                    bad.seq - 1,
                    n,
                    bad,
                    "failed before the log was carried forward to format 2",
                    *_head(self._last),
                    len(walk.erased),
                )
        return ChainStatus(n, n, None, None, *_head(self._last), len(walk.erased))


async def check(log: ChainSource) -> ChainStatus:
    """The whole chain, oldest first; stops at the first bad record."""
    return await ChainWatcher().advance(log)


def _head(last: AuditRecord | None) -> tuple[int, str]:
    return (last.seq, last.hash) if last is not None else (0, GENESIS)


async def _total(log: ChainSource) -> int:
    row = await log.db.fetchone("SELECT COUNT(*) FROM audit")
    return int(row[0]) if row else 0
