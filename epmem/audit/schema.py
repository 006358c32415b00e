"""The audit database's schema, and the step that carries a first-format database forward.

Format 1 (the first releases) kept every text inside the chained body, so erasing a word would
have broken the chain. Format 2 keeps the texts in ``audit_text`` and chains a skeleton of
salted digests (see :mod:`epmem.audit.sealing`). A format-1 record cannot be re-hashed without
losing what an owner may have noted of the old chain, so it keeps its original hash, which
still verifies for as long as its texts are there; what outlives an erasure is its *seal*: a
second chain, computed once when the database is carried forward, over each old record's hash
and skeleton. The seal's head is written into one ordinary chained record ("audit_migration"),
so from then on the old records' skeletons are as tamper-evident as new ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import aiosqlite

from epmem.audit.kinds import AuditMigrationRecord
from epmem.audit.sealing import canonical, chain_hash, seal
from epmem.sqlite import Migration, MigrationSet

GENESIS = "0" * 64
LEGACY_FORMAT = 1
FORMAT = 2
MIGRATION_KIND = AuditMigrationRecord.kind

MIGRATIONS = MigrationSet(
    "audit",
    (
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
        Migration(
            2,
            "erasable texts, fact references and page indexes",
            """
        ALTER TABLE audit ADD COLUMN format INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE audit ADD COLUMN platform TEXT;
        ALTER TABLE audit ADD COLUMN outcome TEXT;
        ALTER TABLE audit ADD COLUMN seal TEXT;
        CREATE TABLE audit_text (
            seq INTEGER NOT NULL,
            slot TEXT NOT NULL,
            salt BLOB,
            text TEXT,
            erased_at TEXT,
            erased_by TEXT,
            erasure TEXT,
            PRIMARY KEY (seq, slot)
        ) WITHOUT ROWID;
        CREATE TABLE audit_fact (
            fact_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (fact_id, seq)
        ) WITHOUT ROWID;
        DROP INDEX audit_contact;
        CREATE INDEX audit_contact ON audit(contact, seq, platform, outcome);
        CREATE INDEX audit_platform ON audit(platform, seq, contact, outcome);
        CREATE INDEX audit_outcome ON audit(outcome, seq, contact, platform);
        CREATE INDEX audit_time ON audit(time, seq);
        CREATE INDEX disclosures_ledger ON disclosures(fact_id, recipient, time, event_id)
        """,
        ),
        Migration(
            3,
            "what became of each reply (epmem.audit.delivery), indexed from the records that say so",
            # the same rules as epmem.audit.delivery.delivery_of, for the records already written
            # (before this index, none stated an outcome: delivered or not was all they said)
            """
        CREATE TABLE delivery (
            seq INTEGER PRIMARY KEY,
            of TEXT NOT NULL,
            outcome TEXT NOT NULL,
            time TEXT NOT NULL
        );
        CREATE INDEX delivery_of ON delivery(of, outcome, time);
        CREATE INDEX disclosures_audit ON disclosures(audit_id);
        INSERT INTO delivery(seq, of, outcome, time)
            SELECT seq, json_extract(body, '$.of'),
                   CASE WHEN json_extract(body, '$.delivered') = 1 THEN 'delivered' ELSE 'refused' END, time
            FROM audit WHERE kind IN ('delivery', 'undelivered') AND json_valid(body)
                AND json_type(body, '$.of') = 'text' AND coalesce(json_extract(body, '$.kind'), 'reply') = 'reply';
        INSERT INTO delivery(seq, of, outcome, time)
            SELECT seq, json_extract(body, '$.audit'), 'refused', time
            FROM audit WHERE kind = 'delivery_failed' AND json_valid(body) AND json_type(body, '$.audit') = 'text'
        """,
        ),
        Migration(
            4,
            "the disclosure ledger checked against the chain: the records written before it, to seal once",
            # epmem.audit.ledger.seal_legacy_ledger seals the rows of records up to here in one
            # chained record when the database is next opened for writing, and empties this table.
            """
        CREATE TABLE ledger_legacy (upto INTEGER NOT NULL);
        INSERT INTO ledger_legacy(upto) SELECT coalesce(max(seq), 0) FROM audit
        """,
        ),
    ),
    legacy_table="migrations",
)


def outcome(kind: str, body: dict[str, Any]) -> str:
    """What became of a message, in the owner's words (the timeline's outcome filter)."""
    if kind == "reply":
        return "deflected" if body.get("deflected") else "answered"
    if kind == "followup":
        return "answered"
    if kind == "approval":
        return "rejected" if body.get("decision") == "rejected" else "answered"
    return {
        "attempted_command": "attempted command",
        "rate_limited": "rate limited",
        "non_text": "not read",
        "policy_change": "policy change",
        "delivery_failed": "delivery failed",
        "approval_expired": "expired",
        MIGRATION_KIND: "migration",
        "ledger_seal": "migration",
    }.get(kind, kind.replace("_", " "))


#: outcomes of a message someone sent (the rest are the owner's or the scheduler's doing).
MESSAGE_OUTCOMES = ("answered", "deflected", "held", "rejected", "attempted command")


def fact_refs(body: dict[str, Any]) -> set[str]:
    """Every fact id a record names: candidates, disclosed, held back, post-check hits, commands."""
    refs: set[str] = set()
    for c in body.get("candidates") or []:
        if isinstance(c, dict) and isinstance(c.get("fact"), str):
            refs.add(c["fact"])
    for key in ("disclosed", "would_disclose", "facts", "closed_would_answer"):
        refs.update(x for x in body.get(key) or [] if isinstance(x, str))
    if isinstance(body.get("fact"), str):
        refs.add(body["fact"])
    postcheck = body.get("postcheck")
    if isinstance(postcheck, dict):
        refs.update(h["fact"] for h in postcheck.get("hits") or [] if isinstance(h, dict) and "fact" in h)
    return refs


async def held_refs(db: aiosqlite.Connection, body: dict[str, Any]) -> set[str]:
    """An approval names no facts itself; the held record it decides does."""
    held = body.get("held_audit")
    if not isinstance(held, str):
        return set()
    sql = "SELECT f.fact_id FROM audit a JOIN audit_fact f ON f.seq = a.seq WHERE a.id = ?"
    async with db.execute(sql, (held,)) as cur:
        return {row[0] async for row in cur}


async def index_record(db: aiosqlite.Connection, seq: int, body: dict[str, Any], texts: Iterable[Any]) -> None:
    """Write a record's erasable texts and fact references (inside the caller's transaction)."""
    await db.executemany(
        "INSERT INTO audit_text(seq, slot, salt, text) VALUES (?,?,?,?)", [(seq, t.slot, t.salt, t.text) for t in texts]
    )
    refs = fact_refs(body) | await held_refs(db, body)
    await db.executemany(
        "INSERT OR IGNORE INTO audit_fact(fact_id, seq) VALUES (?,?)", [(f, seq) for f in sorted(refs)]
    )


async def carry_forward(db: aiosqlite.Connection, now: str, new_id: str) -> int:
    """Seal every format-1 record not sealed yet; return how many (0: nothing to do).

    Runs in one transaction: each old body is split into skeleton and texts, its original hash
    is kept and checked (a record that already failed is named in the migration record, so
    erasing it later cannot hide that), and the seal chain's head is appended as a chained
    record of the new format.
    """
    await db.execute("BEGIN IMMEDIATE")
    try:
        async with db.execute("SELECT COUNT(*) FROM audit WHERE format = ? AND seal IS NULL", (LEGACY_FORMAT,)) as cur:
            row = await cur.fetchone()
        if not row or not row[0]:
            await db.execute("ROLLBACK")
            return 0
        sealed, first_bad = await _seal_legacy(db)
        await _append_migration(db, now, new_id, sealed, first_bad)
        await db.execute("COMMIT")
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    return sealed[0]


async def _seal_legacy(db: aiosqlite.Connection) -> tuple[tuple[int, str], str | None]:
    seal_value, prev, count, first_bad = GENESIS, GENESIS, 0, None
    sql = "SELECT seq, id, time, kind, contact, body, prev_hash, hash, seal FROM audit WHERE format = ? ORDER BY seq"
    async with db.execute(sql, (LEGACY_FORMAT,)) as cur:
        rows = await cur.fetchall()
    for seq, rid, time, kind, contact, raw, prev_hash, h, old_seal in rows:
        if old_seal is not None:  # sealed by an earlier run: the chain goes on from it
            seal_value, prev, count = old_seal, h, count + 1
            continue
        body = json.loads(raw)
        if first_bad is None and (
            prev_hash != prev or chain_hash(prev_hash, canonical(rid, time, kind, contact, body)) != h
        ):
            first_bad = rid
        skeleton, texts = seal(body)
        seal_value = seal_step(seal_value, h, canonical(rid, time, kind, contact, skeleton))
        await db.execute(
            "UPDATE audit SET body = ?, seal = ?, platform = ?, outcome = ? WHERE seq = ?",
            (json.dumps(skeleton, ensure_ascii=False), seal_value, body.get("platform"), outcome(kind, body), seq),
        )
        await index_record(db, seq, body, texts)
        prev, count = h, count + 1
    return (count, seal_value), first_bad


def seal_step(prev_seal: str, record_hash: str, skeleton_canonical: str) -> str:
    return chain_hash(prev_seal + record_hash, skeleton_canonical)


async def _append_migration(
    db: aiosqlite.Connection, now: str, new_id: str, sealed: tuple[int, str], first_bad: str | None
) -> None:
    async with db.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1") as cur:
        row = await cur.fetchone()
    prev = row[0] if row else GENESIS
    body = AuditMigrationRecord(
        action="seal format-1 records", sealed=sealed[0], seal=sealed[1], first_bad=first_bad
    ).body()
    h = chain_hash(prev, canonical(new_id, now, MIGRATION_KIND, "owner", body))
    await db.execute(
        "INSERT INTO audit(id, time, kind, contact, body, prev_hash, hash, format, outcome) VALUES (?,?,?,?,?,?,?,?,?)",
        (new_id, now, MIGRATION_KIND, "owner", json.dumps(body), prev, h, FORMAT, outcome(MIGRATION_KIND, body)),
    )
