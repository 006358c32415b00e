"""What the audit page shows, read beside the running bot and never written.

Every query here is one indexed lookup: the timeline walks ``audit`` by its primary key from a
keyset cursor (``before``/``after`` a seq), each filter has an index ending in seq, and a date
range becomes a seq range through the time index. A page of 50 records out of 100k costs the
same as out of 100.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from epmem.audit.delivery import Ledger
from epmem.audit.knows import LedgerLine, matrix
from epmem.audit.log import COLUMNS, AuditLog, AuditRecord
from epmem.audit.register import FactRegister
from epmem.audit.schema import MESSAGE_OUTCOMES
from epmem.audit.verify import ChainStatus, ChainWatcher
from epmem.errors import EpmemError
from epmem.policy.calculus import Rulebook
from epmem.policy.model import Policy
from epmem.memory.links import EventLinks
from epmem.policy.overlay import Overlay
from epmem.policy.overrides import apply_overrides

PAGE_SIZE = 50
#: how often the banner walks the whole chain again (new records are checked on every request).
FULL_CHECK_S = 300.0
OPTIONS_TTL_S = 60.0
_VERDICT = re.compile(r"^(allow|deny): rule (\d), (.+?)(?: \((.+)\))?$")


class BadQuery(EpmemError, ValueError):
    """A filter the page cannot read; the message names the parameter."""


@dataclass(frozen=True, slots=True)
class Filters:
    contact: str | None = None
    platform: str | None = None
    outcome: str | None = None
    since: date | None = None
    until: date | None = None

    @classmethod
    def parse(cls, params: dict[str, str], outcomes: tuple[str, ...]) -> Filters:
        def day(name: str) -> date | None:
            raw = params.get(name, "").strip()
            if not raw:
                return None
            try:
                return date.fromisoformat(raw)
            except ValueError:
                raise BadQuery(f"{name}: expected a date like 2026-05-01, got {raw!r}") from None

        outcome = params.get("outcome", "").strip() or None
        if outcome is not None and outcome not in outcomes:
            raise BadQuery(f"outcome: one of {', '.join(outcomes)}, got {outcome!r}")
        return cls(
            params.get("contact", "").strip() or None,
            params.get("platform", "").strip() or None,
            outcome,
            day("from"),
            day("to"),
        )

    def as_params(self) -> dict[str, str]:
        out = {
            "contact": self.contact,
            "platform": self.platform,
            "outcome": self.outcome,
            "from": self.since.isoformat() if self.since else None,
            "to": self.until.isoformat() if self.until else None,
        }
        return {k: v for k, v in out.items() if v}


def summary(r: AuditRecord) -> str:
    """One line for a timeline row: the question, or what the owner or scheduler did."""
    return r.entry.summary()


def row(r: AuditRecord) -> dict[str, Any]:
    entry = r.entry
    return {
        "seq": r.seq,
        "id": r.id,
        "time": r.time,
        "kind": r.kind,
        "outcome": r.outcome,
        "contact": r.contact,
        "platform": entry.get("platform"),
        "summary": entry.summary(),
        "erased": bool(r.erased),
        "disclosed": entry.disclosed_facts(),
    }


def verdict_parts(text: str) -> dict[str, Any]:
    m = _VERDICT.match(text)
    if m is None:
        return {"allowed": text.startswith("allow"), "rule": None, "reason": text, "exception": None}
    return {"allowed": m.group(1) == "allow", "rule": int(m.group(2)), "reason": m.group(3), "exception": m.group(4)}


class AuditPages:
    def __init__(
        self,
        audit: AuditLog,
        overlay: Overlay,
        register: FactRegister,
        policy: Callable[[], Awaitable[Policy]],
        heard_it: bool = True,
    ) -> None:
        self.audit = audit
        #: the deployment's heard-it-from-you setting (the owner's ``/heard`` overrides it)
        self.heard_it = heard_it
        self.overlay = overlay
        self.register = register
        self.policy = policy
        self._walking = ChainWatcher()
        self._verified: ChainWatcher | None = None
        self._lock = asyncio.Lock()
        self._options: tuple[float, dict[str, list[str]]] | None = None
        #: the ledger, first time per (fact, reader) as delivered, kept up to date incrementally.
        self._ledger = Ledger()

    # ------------------------------------------------------------------ chain

    async def chain(self) -> ChainStatus:
        """The banner: the last full walk, brought up to the newest record (cheap), or the
        first walk's progress while it is still under way."""
        if self._verified is None:
            return ChainStatus(self._walking.progress, 0, complete=False)
        async with self._lock:
            return await self._verified.advance(self.audit)

    async def verify_forever(self) -> None:
        """Walk the whole chain at start and again every FULL_CHECK_S (an erasure changes texts
        of records already walked); a fresh walk replaces the last one only when it is done."""
        while True:
            self._walking = ChainWatcher()
            await self._walking.advance(self.audit)
            async with self._lock:
                self._verified = self._walking
            await asyncio.sleep(FULL_CHECK_S)

    # ------------------------------------------------------------------ timeline

    async def _seq_bound(self, day: date, first: bool) -> int | None:
        """The first seq at or after a day's start (``first``), or the last before it."""
        moment = day.isoformat()
        sql = (
            "SELECT seq FROM audit WHERE time >= ? ORDER BY time LIMIT 1"
            if first
            else "SELECT seq FROM audit WHERE time < ? ORDER BY time DESC LIMIT 1"
        )
        found = await self.audit.db.fetchone(sql, (moment,))
        return int(found[0]) if found else None

    async def _where(self, f: Filters) -> tuple[list[str], list[Any]] | None:
        where: list[str] = []
        args: list[Any] = []
        for column, value in (("contact", f.contact), ("platform", f.platform), ("outcome", f.outcome)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if f.since is not None:
            low = await self._seq_bound(f.since, True)
            if low is None:
                return None
            where += ["seq >= ?", "time >= ?"]
            args += [low, f.since.isoformat()]
        if f.until is not None:
            end = f.until + timedelta(days=1)
            high = await self._seq_bound(end, False)
            if high is None:
                return None
            where += ["seq <= ?", "time < ?"]
            args += [high, end.isoformat()]
        return where, args

    async def timeline(
        self, f: Filters, before: int | None = None, after: int | None = None, size: int = PAGE_SIZE
    ) -> dict[str, Any]:
        found = await self._where(f)
        records: list[AuditRecord] = []
        total, more, ascending = 0, False, after is not None and before is None
        if found is not None:
            where, args = found
            cursor = [*where, *(["seq < ?"] if before is not None else []), *(["seq > ?"] if after is not None else [])]
            cursor_args = [*args, *([before] if before is not None else []), *([after] if after is not None else [])]
            cond = " WHERE " + " AND ".join(cursor) if cursor else ""
            records = await self.audit.select(
                f"SELECT {COLUMNS} FROM audit{cond} ORDER BY seq {'ASC' if ascending else 'DESC'} LIMIT ?",
                [*cursor_args, size + 1],
            )
            more = len(records) > size
            records = records[:size]
            if ascending:
                records.reverse()
            total = await self._count(where, args)
        newer = older = None
        if records:
            newest, oldest = records[0].seq, records[-1].seq
            if ascending:
                newer = newest if more else None
                older = oldest if await self._exists(found, "<", oldest) else None
            else:
                older = oldest if more else None
                newer = newest if await self._exists(found, ">", newest) else None
        return {
            "filters": f.as_params(),
            "rows": [row(r) for r in records],
            "total": total,
            "page_size": size,
            "older_before": older,
            "newer_after": newer,
            "options": await self._filter_options(),
        }

    async def _exists(self, found: tuple[list[str], list[Any]] | None, op: str, seq: int) -> bool:
        if found is None:
            return False
        where, args = found
        cond = " AND ".join([*where, f"seq {op} ?"])
        return await self.audit.db.fetchone(f"SELECT 1 FROM audit WHERE {cond} LIMIT 1", [*args, seq]) is not None

    async def _count(self, where: list[str], args: list[Any]) -> int:
        cond = " WHERE " + " AND ".join(where) if where else ""
        found = await self.audit.db.fetchone(f"SELECT COUNT(*) FROM audit{cond}", args)
        return int(found[0]) if found else 0

    async def _filter_options(self) -> dict[str, list[str]]:
        """The filter menus: contacts and platforms seen (index scans, at most once a minute),
        and the outcomes."""
        if self._options is not None and time.monotonic() - self._options[0] < OPTIONS_TTL_S:
            return self._options[1]
        out: dict[str, list[str]] = {}
        for column in ("contact", "platform"):
            sql = f"SELECT DISTINCT {column} FROM audit WHERE {column} IS NOT NULL ORDER BY {column}"
            out[column] = [r[0] for r in await self.audit.db.fetchall(sql)]
        out["outcome"] = list(MESSAGE_OUTCOMES)
        self._options = (time.monotonic(), out)
        return out

    # ------------------------------------------------------------------ one decision

    async def decision(self, record_id: str) -> dict[str, Any] | None:
        r = await self.audit.get(record_id)
        if r is None:
            return None
        listed = r.entry.get("candidates", [])
        named = [c.get("fact") for c in listed if isinstance(c.get("fact"), str)]
        facts = {f.id: f for f in await self.register.facts(named)}
        candidates = []
        for c in listed:
            fact = facts.get(c.get("fact"))
            candidates.append(
                {
                    **c,
                    "text": fact.text if fact else None,
                    "verdicts": {who: verdict_parts(v) for who, v in (c.get("verdicts") or {}).items()},
                }
            )
        erased = {e.slot: {"at": e.at, "by": e.by, "erasure": e.erasure} for e in r.erased}
        chain = await self.chain()
        verified = chain.complete and (chain.ok or (chain.first_bad is not None and r.seq < chain.first_bad.seq))
        return {
            "record": r.as_dict(),
            "outcome": r.outcome,
            "candidates": candidates,
            "erased": erased,
            "position": {
                "checked": chain.complete,
                "seq": r.seq,
                "prev_hash": r.prev_hash,
                "hash": r.hash,
                "verified": verified,
                "format": r.format,
            },
        }

    # ------------------------------------------------------------------ who knows

    async def rulebook(self) -> Rulebook:
        base = await self.policy()
        effective, _ = apply_overrides(base, await self.overlay.contact_overrides())
        return Rulebook(
            effective, [e for _, e in await self.overlay.exceptions()], heard=await self.overlay.heard_it(self.heard_it)
        )

    async def _ledger_rows(self) -> list[LedgerLine]:
        """(fact, event, reader, since, told | possibly told); only ledger lines and delivery
        outcomes added since the last call are read (the ledger is append-only: erasure takes
        texts, never who was told)."""
        return await self._ledger.refresh(self.audit.db)

    async def knows(
        self, by_event: bool = False, words: str = "", page: int = 1, size: int = PAGE_SIZE
    ) -> dict[str, Any]:
        """One page of the matrix: rows are chosen (and filtered) by id first, and only the page's
        facts are read and judged, so a memory of 50k facts costs what a page of 50 does."""
        wanted = words.casefold().split()
        ledger = await self._ledger_rows()
        keys = await self.register.keys(wanted)
        known = {fid for _, fid in keys}
        gone = {
            fid: eid
            for fid, eid, *_ in ledger
            if fid not in known and all(w in f"{fid} {eid}".casefold() for w in wanted)
        }
        keys += [(eid, fid) for fid, eid in gone.items()]
        keys.sort()
        units = sorted({eid for eid, _ in keys}) if by_event else [fid for _, fid in keys]
        pages = max(1, -(-len(units) // size))
        page = min(max(page, 1), pages)
        chosen = set(units[(page - 1) * size : page * size])
        ids = [fid for eid, fid in keys if (eid if by_event else fid) in chosen]
        facts = await self.register.facts([i for i in ids if i in known])
        cols, rows = matrix(
            facts, ledger, await self.rulebook(), by_event, {fid: eid for fid, eid in gone.items() if fid in ids}
        )
        return {
            "by": "event" if by_event else "fact",
            "q": words,
            "page": page,
            "pages": pages,
            "total": len(units),
            "columns": [
                {"id": c.id, "label": c.label, "note": c.note, "kind": c.kind, "members": list(c.members)} for c in cols
            ],
            "rows": [r.as_dict(cols) for r in rows],
            "matters": await self.matters(),
        }

    async def matters(self) -> list[list[str]]:
        """The events linked into one matter (epmem/memory/links.py); none on a state database
        no bot with links has opened yet."""
        if not await self.overlay.db.table_exists("event_links"):
            return []
        return (await EventLinks(self.overlay.db).matters()).groups()
