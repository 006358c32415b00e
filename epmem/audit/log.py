"""The audit log: one hash-chained record per decision, written before the reply leaves.

Each record's hash covers its own canonical JSON and the previous record's hash, so editing,
deleting or reordering any record breaks every hash after it and ``verify`` names the first
bad one. The log is append-only by construction (the code has no update path for what the chain
covers) and the chain makes the append-only promise checkable by anyone with the file.

What the chain covers is a skeleton: the words people wrote and were told sit beside it, under
salted digests, so that /forget can erase them and the chain still verifies
(:mod:`epmem.audit.sealing`, :mod:`epmem.audit.erase`).
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from epmem.audit.delivery import TOLD, Fate, fates, index_delivery
from epmem.audit.kinds import RecordBody, entry_for
from epmem.audit.ledger import LEDGER_KEY, ledger_body, seal_legacy_ledger
from epmem.audit.record import AuditRecord, new_record_id, now_iso
from epmem.audit.schema import FORMAT, GENESIS, LEGACY_FORMAT, MIGRATIONS, carry_forward, index_record, outcome
from epmem.audit.sealing import Erased, seal, unseal
from epmem.audit.verify import check
from epmem.db import (
    SQLITE,
    Database,
    DatabaseError,
    connect_to,
    driver_errors,
    is_postgres_url,
    open_database,
    redacted,
)

__all__ = ["GENESIS", "AuditCorrupted", "AuditLog", "AuditRecord", "Disclosure", "export", "new_record_id", "now_iso"]

COLUMNS = "seq, id, time, kind, contact, body, prev_hash, hash, format, seal"
_BATCH = 500


class AuditCorrupted(DatabaseError):
    """The audit database cannot be read, or its chain does not verify."""


@dataclass(frozen=True, slots=True)
class Disclosure:
    """One line of the disclosure ledger: a recipient was told a fact (``status`` "told"), or
    may have been (``"possibly told"``: the reply's delivery is unknown), since ``time``."""

    fact_id: str
    event_id: str
    recipient: str
    time: str
    audit_id: str
    status: str = TOLD


class AuditLog:
    """One owner's chain: in a SQLite file (a path, the default) or in a PostgreSQL database or
    schema (a ``postgresql://`` URL), where several workers may append to it at once."""

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        #: the file, or the server's URL.
        self.target: Path | str = path if is_postgres_url(path) else Path(path)
        #: how errors name it (a URL without its password).
        self.where = redacted(str(path)) if is_postgres_url(path) else str(self.target)
        #: a read-only log (the audit page) never migrates and never writes; the bot's log does.
        self.readonly = readonly
        self._errors = driver_errors(self.target)
        self._read_errors: tuple[type[Exception], ...] = (*self._errors, json.JSONDecodeError)
        self._db: Database | None = None
        # one connection, explicit transactions: concurrent appends (Slack runs listeners
        # concurrently) must not interleave their BEGIN ... COMMIT. Another process appending
        # to the same chain waits for the database's write lock (epmem.db.base.Database.transaction).
        self._append_lock = asyncio.Lock()

    async def open(self) -> AuditLog:
        """The log owns its own file (audit.sqlite), apart from the bot's state."""
        try:
            if self.readonly:
                self._db = await _connect_readonly(self.target, self.where)
                return self
            self._db = await open_database(self.target, [MIGRATIONS], "audit database")
            if self._db.dialect.name == SQLITE:
                # erased text must not linger in free pages (epmem.audit.erase vacuums too).
                await self._db.execute("PRAGMA secure_delete=ON")
                await self._db.execute("PRAGMA temp_store=MEMORY")
            await carry_forward(self._db, now_iso(), new_record_id())
            await seal_legacy_ledger(self._db, now_iso(), new_record_id())
        except DatabaseError as exc:
            await self._close_quietly()
            raise AuditCorrupted(str(exc)) from None
        except self._errors as exc:
            await self._close_quietly()
            raise self._unusable(exc) from None
        return self

    def _unusable(self, exc: Exception) -> AuditCorrupted:
        if isinstance(exc, sqlite3.DatabaseError | json.JSONDecodeError):
            return AuditCorrupted(f"audit database {self.where} is corrupted: {exc}")
        return AuditCorrupted(f"audit database {self.where}: {exc}")

    @property
    def path(self) -> Path:
        """The SQLite file; a log on a PostgreSQL server has none (ValueError)."""
        if isinstance(self.target, Path):
            return self.target
        raise ValueError(f"the audit log is on a server ({self.where}), not in a file")

    async def _close_quietly(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def __aenter__(self) -> AuditLog:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("audit log is not open")
        return self._db

    @property
    def append_lock(self) -> asyncio.Lock:
        return self._append_lock

    @property
    def db_errors(self) -> tuple[type[Exception], ...]:
        """What the database's driver raises (sqlite3's errors, or psycopg's)."""
        return self._errors

    async def write(
        self,
        entry: RecordBody,
        contact: str | None = None,
        disclosed: Iterable[tuple[str, str]] = (),
        recipients: Iterable[str] = (),
    ) -> AuditRecord:
        """Append one typed record (:mod:`epmem.audit.kinds`) and its ledger lines in one
        transaction, chained to the last. The way every part of the bot writes to the log."""
        return await self._append(entry.kind, entry.body(), contact, disclosed, recipients)

    async def append(
        self,
        kind: str,
        body: dict[str, Any],
        contact: str | None = None,
        disclosed: Iterable[tuple[str, str]] = (),
        recipients: Iterable[str] = (),
    ) -> AuditRecord:
        """:meth:`write` for a body given as a dict (test fixtures, old callers): it must still
        be a body of ``kind``'s model, or nothing is written (ValueError)."""
        return await self._append(kind, entry_for(kind, body).body(), contact, disclosed, recipients)

    async def _append(
        self,
        kind: str,
        body: dict[str, Any],
        contact: str | None,
        disclosed: Iterable[tuple[str, str]],
        recipients: Iterable[str],
    ) -> AuditRecord:
        record = AuditRecord(kind=kind, body=body, contact=contact)
        async with self._append_lock:
            try:
                async with self.db.transaction():
                    await self.append_in_transaction(record, disclosed, list(recipients))
            except self._errors as exc:
                raise AuditCorrupted(f"audit database {self.where}: cannot append: {exc}") from None
        return record

    async def append_in_transaction(
        self, record: AuditRecord, disclosed: Iterable[tuple[str, str]] = (), recipients: Sequence[str] = ()
    ) -> None:
        """Chain ``record`` to the last one; the caller holds the lock and the transaction.
        What it discloses to whom goes into its chained body too (epmem.audit.ledger), so the
        ledger's rows can be checked against the chain."""
        disclosed = list(disclosed)
        stated = ledger_body(disclosed, recipients)
        if stated is not None:
            record.body[LEDGER_KEY] = stated
        else:  # a body copied from another record must not claim that record's rows
            record.body.pop(LEDGER_KEY, None)
        record.skeleton, texts = seal(record.body)
        row = await self.db.fetchone("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1")
        record.prev_hash = row[0] if row else GENESIS
        record.hash = record.compute_hash()
        inserted = await self.db.fetchone(
            "INSERT INTO audit(id, time, kind, contact, body, prev_hash, hash, format, platform, outcome) "
            "VALUES (?,?,?,?,?,?,?,?,?,?) RETURNING seq",
            (
                record.id,
                record.time,
                record.kind,
                record.contact,
                json.dumps(record.skeleton, ensure_ascii=False),
                record.prev_hash,
                record.hash,
                FORMAT,
                _platform(record.body),
                outcome(record.kind, record.body),
            ),
        )
        record.seq = int(inserted[0]) if inserted else 0
        await index_record(self.db, record.seq, record.body, texts)
        await index_delivery(self.db, record.seq, record.kind, record.body, record.time)
        await self.db.executemany(
            "INSERT INTO disclosures(audit_id, fact_id, event_id, recipient, time) VALUES (?,?,?,?,?)",
            [(record.id, fid, eid, r, record.time) for fid, eid in disclosed for r in recipients],
        )

    # ------------------------------------------------------------------ reading

    async def records(
        self, contact: str | None = None, kind: str | None = None, limit: int | None = None
    ) -> list[AuditRecord]:
        """Oldest first; ``limit`` keeps the newest ones."""
        where, args = [], []
        if contact is not None:
            where.append("contact = ?")
            args.append(contact)
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        sql = f"SELECT {COLUMNS} FROM audit" + (" WHERE " + " AND ".join(where) if where else "")
        if limit is not None:
            return (await self.select(sql + " ORDER BY seq DESC LIMIT ?", [*args, int(limit)]))[::-1]
        return [r async for r in self.stream(" AND ".join(where), args)]

    async def select(self, sql: str, args: Sequence[Any]) -> list[AuditRecord]:
        """Records for a query over ``audit`` selecting COLUMNS, each with its texts."""
        try:
            return await self._with_texts(await self.db.fetchall(sql, list(args)))
        except self._read_errors as exc:
            raise self._unusable(exc) from None

    async def stream(self, where: str = "", args: Sequence[Any] = (), after: int = 0) -> AsyncIterator[AuditRecord]:
        """Every matching record after seq ``after``, oldest first, read in batches (no long
        read transaction)."""
        last = after
        cond = f" AND ({where})" if where else ""
        while True:
            sql = f"SELECT {COLUMNS} FROM audit WHERE seq > ?{cond} ORDER BY seq LIMIT {_BATCH}"
            try:
                rows = await self.db.fetchall(sql, [last, *args])
                batch = await self._with_texts(rows)
            except self._read_errors as exc:
                raise self._unusable(exc) from None
            for rec in batch:
                yield rec
            if len(rows) < _BATCH:
                return
            last = rows[-1][0]

    async def _with_texts(self, rows: list[Any]) -> list[AuditRecord]:
        if not rows:
            return []
        seqs = [r[0] for r in rows]
        marks = ",".join("?" * len(seqs))
        texts: dict[int, dict[str, Any]] = {s: {} for s in seqs}
        sql = f"SELECT seq, slot, salt, text, erased_at, erased_by, erasure FROM audit_text WHERE seq IN ({marks})"
        for seq, slot, salt, text, at, by, erasure in await self.db.fetchall(sql, seqs):
            texts[seq][slot] = (salt, text, Erased(slot, at, by or "", erasure or "") if at else None)
        return [_record(row, texts[row[0]]) for row in rows]

    async def get(self, record_id: str) -> AuditRecord | None:
        found = await self.select(f"SELECT {COLUMNS} FROM audit WHERE id = ?", [record_id])
        return found[0] if found else None

    async def verify(self) -> tuple[int, AuditRecord | None]:
        """Walk the chain; return (records checked, first bad record or None)."""
        status = await check(self)
        return status.verified, status.first_bad

    async def who_knows(self, fact_or_event: str) -> list[Disclosure]:
        """The ledger: every recipient told this fact (or any fact of this event), or possibly
        told it, oldest first; a reply that never reached its reader tells nobody anything
        (epmem.audit.delivery says how each delivery outcome counts)."""
        sql = (
            "SELECT fact_id, event_id, recipient, time, audit_id FROM disclosures "
            "WHERE fact_id = ? OR event_id = ? ORDER BY time"
        )
        try:
            return await self._as_told(await self.db.fetchall(sql, (fact_or_event, fact_or_event)))
        except self._errors as exc:
            raise self._unusable(exc) from None

    async def told_of(
        self, event_ids: Iterable[str], since: str | None = None, fact_ids: Iterable[str] = ()
    ) -> list[Disclosure]:
        """The ledger lines of these events, and of these facts under whatever event they were
        told in (told or possibly told, like :meth:`who_knows`), decided at or after ``since``:
        what the composite rule across replies counts."""
        lines: dict[tuple[Any, ...], None] = {}
        try:
            for column, ids in (("event_id", sorted(set(event_ids))), ("fact_id", sorted(set(fact_ids)))):
                for i in range(0, len(ids), _BATCH):
                    batch = ids[i : i + _BATCH]
                    sql = (
                        "SELECT fact_id, event_id, recipient, time, audit_id FROM disclosures "
                        f"WHERE {column} IN ({','.join('?' * len(batch))})" + (" AND time >= ?" if since else "")
                    )
                    for row in await self.db.fetchall(sql, [*batch, *([since] if since else [])]):
                        lines[row] = None
            return await self._as_told(list(lines))
        except self._errors as exc:
            raise self._unusable(exc) from None

    async def _as_told(self, lines: Sequence[tuple[Any, ...]]) -> list[Disclosure]:
        """Ledger rows (fact, event, recipient, time, audit id) as disclosures, oldest first;
        a reply that never reached its reader tells nobody anything."""
        fate, _ = await fates(self.db, {line[4] for line in lines})
        out = []
        for fact, event, recipient, moment, audit_id in lines:
            found = fate.get(audit_id, Fate()).status(moment)
            if found is not None:
                out.append(Disclosure(fact, event, recipient, found[1], audit_id, found[0]))
        return sorted(out, key=lambda d: d.time)


async def _connect_readonly(target: Path | str, where: str) -> Database:
    if isinstance(target, Path) and not target.exists():
        raise sqlite3.OperationalError(f"no audit database at {target}")
    db = await connect_to(target, readonly=True)
    try:
        if not await db.table_exists("audit_text"):
            if db.dialect.name != SQLITE:
                raise DatabaseError(f"audit database {where} has no audit tables: start the bot once to create them")
            raise sqlite3.DatabaseError(
                "the audit database is in the first format: start the bot or run "
                "`epmem audit verify` once to carry it forward"
            )
    except BaseException:
        await db.close()
        raise
    return db


def _platform(body: dict[str, Any]) -> str | None:
    value = body.get("platform")
    return value if isinstance(value, str) else None


def _record(row: Any, texts: dict[str, Any]) -> AuditRecord:
    seq, rid, time, kind, contact, raw, prev, h, fmt, seal_value = row
    skeleton = json.loads(raw)
    words = {slot: t[1] for slot, t in texts.items()}
    rec = AuditRecord(
        kind=kind,
        body=unseal(skeleton, words),
        contact=contact,
        id=rid,
        time=time,
        prev_hash=prev,
        hash=h,
        seq=seq,
        skeleton=skeleton,
        erased=[t[2] for t in texts.values() if t[2] is not None],
        format=fmt or LEGACY_FORMAT,
        seal=seal_value,
        stored={slot: (t[0], t[1]) for slot, t in texts.items()},
    )
    return rec


def export(records: list[AuditRecord], fmt: str) -> str:
    """JSONL keeps every field; CSV flattens the nested ones into JSON cells."""
    if fmt == "jsonl":
        return "".join(json.dumps(r.as_dict(), ensure_ascii=False) + "\n" for r in records)
    if fmt == "csv":
        out = io.StringIO()
        columns = ["seq", "id", "time", "kind", "contact", "body", "prev_hash", "hash"]
        writer = csv.writer(out)
        writer.writerow(columns)
        for r in records:
            writer.writerow(
                [
                    r.seq,
                    r.id,
                    r.time,
                    r.kind,
                    r.contact or "",
                    json.dumps(r.body, ensure_ascii=False, sort_keys=True),
                    r.prev_hash,
                    r.hash,
                ]
            )
        return out.getvalue()
    raise ValueError(f"unknown export format {fmt!r}: use jsonl or csv")
