"""Erasure: /forget takes a fact's words out of the audit, and the chain still verifies.

Which records lose their texts: every record that names one of the facts (as a candidate, as
disclosed or held back, in a post-check hit, or through the held reply an approval decided) and
every record whose text contains one of the facts' sentences word for word (an owner's edit
quoting it, a question that repeated it). All of such a record's texts go, the question
included: a question can carry the very words it asks about. The ids, verdicts and reasons
stay; they are what the chain covers. A chained "erasure" record says which records lost their
texts, when and by whom, and ``verify`` insists on it.

Physical: the texts are overwritten in place (secure_delete), the database is vacuumed, and the
WAL is checkpointed and truncated, so no copy is left in free pages or the write-ahead log. On
PostgreSQL the texts' table is rewritten (VACUUM FULL); the server's own write-ahead log and
backups are the operator's to age out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from epmem.audit.kinds import ErasureRecord
from epmem.audit.log import AuditCorrupted, AuditLog
from epmem.audit.record import AuditRecord, now_iso
from epmem.db import Database

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Erasure:
    """What one erasure did: the chained record that says so, and how much it took away."""

    record: AuditRecord | None
    records: tuple[str, ...]
    texts: int


async def _seqs(db: Database, fact_ids: Sequence[str], sentences: Sequence[str], everything: bool) -> set[int]:
    seqs: set[int] = set()
    if everything:
        return {row[0] for row in await db.fetchall("SELECT DISTINCT seq FROM audit_text WHERE text IS NOT NULL")}
    marks = ",".join("?" * len(fact_ids))
    if fact_ids:
        rows = await db.fetchall(f"SELECT seq FROM audit_fact WHERE fact_id IN ({marks})", list(fact_ids))
        seqs.update(row[0] for row in rows)
    found = db.dialect.find("lower(text)", "lower(?)")
    for sentence in {s.strip() for s in sentences if s and s.strip()}:
        sql = f"SELECT DISTINCT seq FROM audit_text WHERE text IS NOT NULL AND {found} > 0"
        seqs.update(row[0] for row in await db.fetchall(sql, (sentence,)))
    return seqs


async def erase_facts(
    audit: AuditLog,
    fact_ids: Sequence[str],
    sentences: Sequence[str],
    by: str,
    details: dict[str, Any] | None = None,
    *,
    everything: bool = False,
) -> Erasure:
    """Erase the texts of every record that could carry these facts' words, in one transaction
    with the chained erasure record; then compact the file. Nothing to erase: no record.
    ``everything``: every text of every record (an owner's whole memory goes: an uninstall)."""
    db = audit.db
    async with audit.append_lock:
        try:
            async with db.transaction():
                seqs = sorted(await _seqs(db, fact_ids, sentences, everything))
                live = await _live(db, seqs)
                if not live:
                    return Erasure(None, (), 0)
                record, count = await _erase(audit, live, fact_ids, by, details)
        except audit.db_errors as exc:
            raise AuditCorrupted(f"audit database {audit.where}: cannot erase: {exc}") from None
    await compact(audit)
    log.info("audit.erased", facts=len(fact_ids), records=len(live), texts=count, erasure=record.id)
    return Erasure(record, tuple(rid for _, rid in live), count)


async def _erase(
    audit: AuditLog,
    live: list[tuple[int, str]],
    fact_ids: Sequence[str],
    by: str,
    details: dict[str, Any] | None,
) -> tuple[AuditRecord, int]:
    """Inside the transaction: the texts go, and the chained record says so."""
    entry = ErasureRecord.model_validate(
        {
            "action": "erase texts",
            "facts": sorted(fact_ids),
            "records": [rid for _, rid in live],
            **(details or {}),
            "by": by,
        }
    )
    record = AuditRecord(entry.kind, entry.body(), contact="owner", time=now_iso())
    marks = ",".join("?" * len(live))
    count = await audit.db.execute(
        f"UPDATE audit_text SET text = NULL, salt = NULL, erased_at = ?, erased_by = ?, erasure = ? "
        f"WHERE text IS NOT NULL AND seq IN ({marks})",
        [record.time, by, record.id, *(seq for seq, _ in live)],
    )
    record.body["texts"] = count
    await audit.append_in_transaction(record)
    return record, count


async def _live(db: Database, seqs: list[int]) -> list[tuple[int, str]]:
    """(seq, id) of the records among ``seqs`` that still hold a text."""
    out: list[tuple[int, str]] = []
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = (
            f"SELECT DISTINCT a.seq, a.id FROM audit a JOIN audit_text t ON t.seq = a.seq "
            f"WHERE t.text IS NOT NULL AND a.seq IN ({marks}) ORDER BY a.seq"
        )
        out.extend((row[0], row[1]) for row in await db.fetchall(sql, chunk))
    return out


async def compact(audit: AuditLog) -> None:
    """Leave no erased byte behind: on SQLite, vacuum, then fold and truncate the WAL
    (epmem.db.lite.scrub); on PostgreSQL, rewrite the texts' table (its scrub says what is left)."""
    async with audit.append_lock:
        if not await audit.db.scrub("audit_text"):
            log.warning("audit.checkpoint_incomplete")
