"""The audit log: one hash-chained record per decision, written before the reply leaves.

Each record's hash covers its own canonical JSON and the previous record's hash, so editing,
deleting or reordering any record breaks every hash after it and ``verify`` names the first
bad one. The log is append-only by construction (the code has no update path) and the chain
makes the append-only promise checkable by anyone with the file.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import aiosqlite

from epmem.sqlite import DatabaseError, Migration, MigrationSet, open_database

GENESIS = "0" * 64

MIGRATIONS = MigrationSet("audit", (
    Migration(
        1,
        "audit records",
        """
        CREATE TABLE audit (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            time TEXT NOT NULL,
            kind TEXT NOT NULL,
            contact TEXT,
            body TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE INDEX audit_contact ON audit(contact);
        CREATE TABLE disclosures (
            audit_id TEXT NOT NULL,
            fact_id TEXT NOT NULL,
            event_id TEXT NOT NULL,
            recipient TEXT NOT NULL,
            time TEXT NOT NULL
        );
        CREATE INDEX disclosures_fact ON disclosures(fact_id);
        CREATE INDEX disclosures_event ON disclosures(event_id);
        """,
    ),
), legacy_table="migrations")


class AuditCorrupted(DatabaseError):
    """The audit database cannot be read, or its chain does not verify."""


@dataclass(slots=True)
class AuditRecord:
    kind: str
    body: dict[str, Any]
    contact: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    time: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="milliseconds"))
    prev_hash: str = GENESIS
    hash: str = ""
    seq: int = 0

    def canonical(self) -> str:
        return json.dumps(
            {"id": self.id, "time": self.time, "kind": self.kind, "contact": self.contact, "body": self.body},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    def compute_hash(self) -> str:
        return hashlib.sha256((self.prev_hash + self.canonical()).encode()).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "id": self.id,
            "time": self.time,
            "kind": self.kind,
            "contact": self.contact,
            **self.body,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


@dataclass(frozen=True, slots=True)
class Disclosure:
    """One line of the disclosure ledger: a recipient was told a fact."""

    fact_id: str
    event_id: str
    recipient: str
    time: str
    audit_id: str


class AuditLog:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: aiosqlite.Connection | None = None
        # one connection, explicit transactions: concurrent appends (Slack runs listeners
        # concurrently) must not interleave their BEGIN ... COMMIT.
        self._append_lock = asyncio.Lock()

    async def open(self) -> AuditLog:
        """The log owns its own file (audit.sqlite), apart from the bot's state."""
        try:
            self._db = await open_database(self.path, [MIGRATIONS], "audit database")
        except DatabaseError as exc:
            raise AuditCorrupted(str(exc)) from None
        return self

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def __aenter__(self) -> AuditLog:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("audit log is not open")
        return self._db

    async def append(
        self, kind: str, body: dict[str, Any], contact: str | None = None,
        disclosed: Iterable[tuple[str, str]] = (), recipients: Iterable[str] = (),
    ) -> AuditRecord:
        """Append one record (and its ledger lines) in one transaction, chained to the last."""
        record = AuditRecord(kind=kind, body=body, contact=contact)
        async with self._append_lock:
            await self._append(record, disclosed, list(recipients))
        return record

    async def _append(self, record: AuditRecord, disclosed: Iterable[tuple[str, str]],
                      recipients: list[str]) -> None:
        kind, body, contact = record.kind, record.body, record.contact
        began = False
        try:
            await self.db.execute("BEGIN IMMEDIATE")
            began = True
            async with self.db.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1") as cur:
                row = await cur.fetchone()
            record.prev_hash = row[0] if row else GENESIS
            record.hash = record.compute_hash()
            cur2 = await self.db.execute(
                "INSERT INTO audit(id, time, kind, contact, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
                (record.id, record.time, kind, contact, json.dumps(body, ensure_ascii=False),
                 record.prev_hash, record.hash),
            )
            record.seq = cur2.lastrowid or 0
            await self.db.executemany(
                "INSERT INTO disclosures(audit_id, fact_id, event_id, recipient, time) VALUES (?,?,?,?,?)",
                [(record.id, fid, eid, r, record.time) for fid, eid in disclosed for r in recipients],
            )
            await self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if began:
                await self.db.execute("ROLLBACK")
            raise AuditCorrupted(f"audit database {self.path}: cannot append: {exc}") from None

    async def records(self, contact: str | None = None, kind: str | None = None,
                      limit: int | None = None) -> list[AuditRecord]:
        sql = "SELECT seq, id, time, kind, contact, body, prev_hash, hash FROM audit"
        where, args = [], []
        if contact is not None:
            where.append("contact = ?")
            args.append(contact)
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [r async for r in self._iter(sql, args)][::-1]

    async def _iter(self, sql: str, args: list[Any]) -> AsyncIterator[AuditRecord]:
        try:
            async with self.db.execute(sql, args) as cur:
                async for seq, rid, time, kind, contact, body, prev, h in cur:
                    yield AuditRecord(kind=kind, body=json.loads(body), contact=contact, id=rid,
                                      time=time, prev_hash=prev, hash=h, seq=seq)
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            raise AuditCorrupted(f"audit database {self.path} is corrupted: {exc}") from None

    async def get(self, record_id: str) -> AuditRecord | None:
        async for rec in self._iter(
            "SELECT seq, id, time, kind, contact, body, prev_hash, hash FROM audit WHERE id = ?", [record_id]
        ):
            return rec
        return None

    async def verify(self) -> tuple[int, AuditRecord | None]:
        """Walk the chain; return (records checked, first bad record or None)."""
        prev = GENESIS
        n = 0
        async for rec in self._iter(
            "SELECT seq, id, time, kind, contact, body, prev_hash, hash FROM audit ORDER BY seq", []
        ):
            if rec.prev_hash != prev or rec.compute_hash() != rec.hash:
                return n, rec
            prev = rec.hash
            n += 1
        return n, None

    async def who_knows(self, fact_or_event: str) -> list[Disclosure]:
        """The ledger: every recipient told this fact (or any fact of this event), oldest first."""
        sql = ("SELECT fact_id, event_id, recipient, time, audit_id FROM disclosures "
               "WHERE fact_id = ? OR event_id = ? ORDER BY time")
        try:
            async with self.db.execute(sql, (fact_or_event, fact_or_event)) as cur:
                return [Disclosure(*row) async for row in cur]
        except sqlite3.DatabaseError as exc:
            raise AuditCorrupted(f"audit database {self.path} is corrupted: {exc}") from None


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
            writer.writerow([r.seq, r.id, r.time, r.kind, r.contact or "",
                             json.dumps(r.body, ensure_ascii=False, sort_keys=True), r.prev_hash, r.hash])
        return out.getvalue()
    raise ValueError(f"unknown export format {fmt!r}: use jsonl or csv")
