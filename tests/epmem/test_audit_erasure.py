"""Erasing texts from the audit: the words leave every file, the chain still verifies, and
nothing can be removed without the chained erasure record saying so. Old databases carry forward."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from epmem.audit import AuditLog, check, erase_facts
from epmem.audit.verify import ChainWatcher
from epmem.audit.sealing import canonical, chain_hash
from epmem.audit.schema import GENESIS
from epmem.db import connect_to, is_postgres_url
from testkit.postgres import run_sql

CANARY = "Sam is quietly interviewing at Northwind"


def files_with(folder: Path, needle: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


async def left_behind(target: Path | str, folder: Path, needle: str) -> list[str]:
    """Where ``needle`` is still stored: the files of a SQLite database's folder (free pages and
    the WAL included); the rows of a PostgreSQL database's audit tables."""
    if not is_postgres_url(target):
        return files_with(folder, needle.encode())
    db = await connect_to(target)
    try:
        found = [
            f"{table} {row[0]}"
            for table, sql in (
                ("audit", "SELECT seq FROM audit WHERE strpos(body, ?) > 0"),
                ("audit_text", "SELECT seq FROM audit_text WHERE strpos(text, ?) > 0"),
            )
            for row in await db.fetchall(sql, (needle,))
        ]
    finally:
        await db.close()
    return found


def reply_body(
    question: str, reply: str, fact: str, disclosed: bool = True, evidence: str = "quietly interviewing"
) -> dict[str, object]:
    return {
        "platform": "telegram",
        "question": question,
        "reply": reply,
        "deflected": not disclosed,
        "candidates": [
            {
                "fact": fact,
                "event": "e1",
                "version": "truth",
                "score": 1.0,
                "allowed": disclosed,
                "used": disclosed,
                "verdicts": {"leo": "allow (rule 5: default audience)"},
            }
        ],
        "disclosed": [fact] if disclosed else [],
        "postcheck": {"outcome": "passed", "checked": 1, "hits": [{"fact": fact, "evidence": [evidence]}]},
    }


async def test_erasure_removes_the_words_everywhere_and_the_chain_still_verifies(
    tmp_path: Path, database_target: Path | str
) -> None:
    path = database_target
    async with AuditLog(path) as log:
        for i in range(15):
            await log.append(
                "reply",
                reply_body(f"what is new {i}?", f"Here's what I can share: {CANARY}.", "f8"),
                contact="leo",
                disclosed=[("f8", "e1")],
                recipients=["leo"],
            )
        other = await log.append(
            "reply", reply_body("and the weather?", "It rained all week.", "f2", evidence="rained"), contact="ana"
        )
        quoted = await log.append(
            "approval", {"decision": "edited", "reply": f"Well, {CANARY.lower()}!", "held_audit": "nope"}, contact="leo"
        )
        assert await left_behind(path, tmp_path, CANARY)
        done = await erase_facts(log, ["f8"], [CANARY], by="telegram:1", details={"event": None})
        assert done.record is not None and len(done.records) == 16 and quoted.id in done.records
        assert done.texts == 15 * 3 + 1  # question, reply, evidence of each reply; the edited text
        assert await left_behind(path, tmp_path, CANARY) == []
        assert await left_behind(path, tmp_path, "quietly interviewing") == []
        status = await check(log)
        assert status.ok and status.verified == status.total == 18, status
        erased = await log.get(done.records[0])
        assert erased is not None and erased.body["reply"] is None and erased.body["question"] is None
        assert erased.body["disclosed"] == ["f8"]  # ids and verdicts stay
        assert {e.slot for e in erased.erased} == {"question", "reply", "postcheck.hits.0.evidence.0"}
        assert {(e.by, e.erasure) for e in erased.erased} == {("telegram:1", done.record.id)}
        kept = await log.get(other.id)
        assert kept is not None and kept.body["reply"] == "It rained all week." and not kept.erased
        assert (await erase_facts(log, ["f8"], [CANARY], by="x")).record is None  # nothing left to erase
    async with AuditLog(path) as log:  # and after reopening
        assert (await log.verify())[1] is None


async def test_removing_a_text_without_an_erasure_record_is_tampering(database_target: Path | str) -> None:
    path = database_target
    async with AuditLog(path) as log:
        ids = [(await log.append("reply", reply_body(f"q{i}", f"r{i}", "f1"))).id for i in range(3)]
    run_sql(
        path,
        "UPDATE audit_text SET text = NULL, salt = NULL, erased_at = 'x', erased_by = 'x', erasure = 'x' WHERE seq = 2",
    )
    async with AuditLog(path) as log:
        status = await check(log)
        assert status.first_bad is not None and status.first_bad.id == ids[1] and status.verified == 1
        assert "without a chained erasure record" in (status.reason or "")
    run_sql(path, "UPDATE audit_text SET text = 'r9' WHERE seq = 3 AND slot = 'reply'")
    async with AuditLog(path) as log:
        status = await check(log)
        assert status.first_bad is not None and status.first_bad.id == ids[2]
        assert "does not match its digest" in (status.reason or "")


def write_format_1(path: Path, bodies: list[dict[str, object]]) -> list[str]:
    """A database exactly as the first audit format wrote it (texts inside the chained body)."""
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
                                 applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP);
        CREATE TABLE audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, time TEXT NOT NULL,
                            kind TEXT NOT NULL, contact TEXT, body TEXT NOT NULL, prev_hash TEXT NOT NULL,
                            hash TEXT NOT NULL);
        CREATE INDEX audit_contact ON audit(contact);
        CREATE TABLE disclosures (audit_id TEXT NOT NULL, fact_id TEXT NOT NULL, event_id TEXT NOT NULL,
                                  recipient TEXT NOT NULL, time TEXT NOT NULL);
        CREATE INDEX disclosures_fact ON disclosures(fact_id);
        CREATE INDEX disclosures_event ON disclosures(event_id);
        INSERT INTO migrations(version, name) VALUES (1, 'audit records');
    """)
    prev, hashes = GENESIS, []
    for i, body in enumerate(bodies):
        rid, time = f"old{i}", f"2026-01-0{i + 1}T10:00:00.000+00:00"
        h = chain_hash(prev, canonical(rid, time, "reply", "leo", body))
        db.execute(
            "INSERT INTO audit(id, time, kind, contact, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
            (rid, time, "reply", "leo", json.dumps(body), prev, h),
        )
        prev = h
        hashes.append(h)
    db.commit()
    db.close()
    return hashes


async def test_a_first_format_database_carries_forward_keeps_its_hashes_and_can_be_erased(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    hashes = write_format_1(path, [reply_body("q?", f"Yes: {CANARY}.", "f8"), reply_body("w?", "Sunny.", "f2")])
    async with AuditLog(path) as log:
        records = await log.records()
        assert [r.hash for r in records[:2]] == hashes  # the old hashes are untouched
        assert records[0].body["reply"] == f"Yes: {CANARY}." and records[2].kind == "audit_migration"
        assert records[2].body["sealed"] == 2 and records[2].body["first_bad"] is None
        assert (await check(log)).ok
        new = await log.append("reply", reply_body("again?", f"Still: {CANARY}.", "f8"))
        done = await erase_facts(log, ["f8"], [CANARY], by="owner")
        assert set(done.records) == {"old0", new.id}
        status = await check(log)
        assert status.ok and status.total == 5, status
    assert files_with(tmp_path, CANARY.encode()) == []
    db = sqlite3.connect(path)  # the sealed skeleton of an erased old record is still tamper-evident
    body = json.loads(db.execute("SELECT body FROM audit WHERE id = 'old0'").fetchone()[0])
    body["candidates"][0]["allowed"] = False
    db.execute("UPDATE audit SET body = ? WHERE id = 'old0'", (json.dumps(body),))
    db.commit()
    db.close()
    async with AuditLog(path) as log:
        status = await check(log)
        assert status.first_bad is not None and status.first_bad.id == "old0" and "seal" in (status.reason or "")


async def test_a_first_format_record_broken_before_carrying_forward_stays_reported(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite"
    write_format_1(path, [reply_body("q?", f"Yes: {CANARY}.", "f8"), reply_body("w?", "Sunny.", "f2")])
    db = sqlite3.connect(path)
    body = json.loads(db.execute("SELECT body FROM audit WHERE id = 'old0'").fetchone()[0])
    body["deflected"] = True
    db.execute("UPDATE audit SET body = ? WHERE id = 'old0'", (json.dumps(body),))
    db.commit()
    db.close()
    async with AuditLog(path) as log:
        assert (await log.records())[-1].body["first_bad"] == "old0"
        await erase_facts(log, ["f8"], [CANARY], by="owner")  # erasing it cannot hide the old break
        status = await check(log)
        assert status.first_bad is not None and status.first_bad.id == "old0"


async def test_the_page_watcher_checks_only_new_records_and_keeps_a_break(database_target: Path | str) -> None:
    path = database_target
    async with AuditLog(path) as log:
        watcher = ChainWatcher()
        for i in range(3):
            await log.append("reply", reply_body(f"q{i}", f"r{i}", "f1"))
        first = await watcher.advance(log)
        assert first.ok and first.complete and watcher.progress == 3 and first.head_seq == 3
        late = await log.append("reply", reply_body("q3", "r3", "f1"))
        assert (await watcher.advance(log)).head_hash == late.hash
        await log.append("reply", reply_body("q4", "r4", "f1"))
        run_sql(path, "UPDATE audit SET prev_hash = ? WHERE seq = 5", "f" * 64)
        broken = await watcher.advance(log)
        assert broken.first_bad is not None and broken.first_bad.seq == 5 and broken.verified == 4
        assert (await watcher.advance(log)).first_bad == broken.first_bad  # stays broken
