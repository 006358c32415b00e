"""The disclosure ledger follows each reply's delivery outcome (epmem/audit/delivery.py).

Real audit files: replies are appended with their ledger lines, then the records that say
what became of them (delivered, refused, unknown, resent, discarded), exactly as the bot's
connector state and owner commands write them. Both readers of the ledger must agree: the
log's ``who_knows`` and the audit page's incremental :class:`~epmem.audit.Ledger`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from epmem.audit import POSSIBLY, AuditLog, Ledger
from epmem.audit.knows import _told_index
from epmem.audit.log import AuditRecord


async def reply(log: AuditLog, fact: str, reader: str) -> AuditRecord:
    return await log.append(
        "reply", {"question": "q", "disclosed": [fact]}, contact=reader, disclosed=[(fact, "e1")], recipients=[reader]
    )


async def undelivered(log: AuditLog, of: AuditRecord, outcome: str = "refused", kind: str = "reply") -> AuditRecord:
    return await log.append(
        "undelivered",
        {
            "of": of.id,
            "kind": kind,
            "delivered": False,
            "outcome": outcome,
            "error": "Forbidden",
            "undelivered": "k" + of.id[:4],
        },
    )


async def delivered(log: AuditLog, of: AuditRecord, **extra: object) -> AuditRecord:
    return await log.append("delivery", {"of": of.id, "delivered": True, **extra})


async def discarded(log: AuditLog, of: AuditRecord) -> AuditRecord:
    return await log.append(
        "policy_change", {"action": "discard_undelivered", "undelivered": "k", "of": of.id}, contact="owner"
    )


async def test_each_outcome_counts_as_the_owner_would_expect(database_target: Path | str) -> None:
    async with AuditLog(database_target) as log:
        ledger = Ledger()

        async def known() -> dict[str, tuple[str, str]]:
            lines = {r: (status, since) for _, _, r, since, status in await ledger.refresh(log.db)}
            assert lines == {d.recipient: (d.status, d.time) for d in await log.who_knows("f1")}
            return lines

        ok = await reply(log, "f1", "leo")
        first = await delivered(log, ok)
        assert await known() == {"leo": ("told", first.time)}

        blocked = await reply(log, "f1", "ana")
        assert (await known())["ana"] == ("told", blocked.time)  # in flight: assume it arrives
        await undelivered(log, blocked)
        assert "ana" not in await known()
        resent = await delivered(log, blocked, resent="k1")
        assert (await known())["ana"] == ("told", resent.time)  # from the resend on

        dropped = await reply(log, "f1", "raj")
        await undelivered(log, dropped)
        await discarded(log, dropped)
        assert "raj" not in await known()

        late = await reply(log, "f1", "kim")
        await undelivered(log, late, "unknown")
        assert (await known())["kim"] == (POSSIBLY, late.time)
        await discarded(log, late)  # what the platform may have shown stays possibly known
        assert (await known())["kim"] == (POSSIBLY, late.time)
        again = await reply(log, "f1", "kim")  # told for sure later: told wins over possibly
        await delivered(log, again)
        assert (await known())["kim"][0] == "told"

        noted = await reply(log, "f1", "ben")
        await undelivered(log, noted, kind="owner_note")  # the owner's note failed, not the reply
        assert (await known())["ben"] == ("told", noted.time)

        approved = await log.append(
            "approval", {"decision": "approved"}, contact="grace", disclosed=[("f1", "e1")], recipients=["grace"]
        )
        await log.append("delivery_failed", {"audit": approved.id, "error": "DeliveryFailed", "outcome": "refused"})
        assert "grace" not in await known()
        assert (await log.verify())[1] is None


async def test_the_migration_indexes_outcomes_written_before_it(tmp_path: Path) -> None:
    """Records written before the index (no ``outcome`` field, discards without ``of``) are
    indexed when the database is opened by this version."""
    path = tmp_path / "audit.sqlite"
    async with AuditLog(path) as log:
        ok, refused, failed = (
            await reply(log, "f1", "leo"),
            await reply(log, "f1", "ana"),
            await reply(log, "f1", "raj"),
        )
        await log.append("delivery", {"of": ok.id, "delivered": True})
        await log.append("undelivered", {"of": refused.id, "kind": "reply", "delivered": False})
        await log.append("undelivered", {"of": ok.id, "kind": "owner_note", "delivered": False})
        await log.append("delivery_failed", {"audit": failed.id, "error": "ConnectionError"})
        await log.append("policy_change", {"action": "discard_undelivered", "undelivered": "k"}, contact="owner")
        written = {d.recipient for d in await log.who_knows("f1")}
    assert written == {"leo"}
    db = sqlite3.connect(path)
    db.execute("DROP TABLE delivery")
    db.execute("DROP INDEX disclosures_audit")
    db.execute("DROP TABLE ledger_legacy")
    db.execute("DELETE FROM schema_migrations WHERE migration_set = 'audit' AND version >= 3")
    db.commit()
    db.close()
    async with AuditLog(path, readonly=True) as old:  # a page on a database no bot opened since
        assert {d.recipient for d in await old.who_knows("f1")} == {"leo", "ana", "raj"}
    async with AuditLog(path) as log:
        assert {d.recipient for d in await log.who_knows("f1")} == written
        assert (await log.verify())[1] is None


def test_the_matrix_prefers_told_then_the_earliest() -> None:
    """Several lines for one reader (a stranger column gathers many): a sure "told" beats any
    "possibly told", then the earliest of the same kind wins."""
    lines = [
        ("f", "e", "a", "2", POSSIBLY),
        ("f", "e", "a", "1", POSSIBLY),
        ("f", "e", "b", "3", POSSIBLY),
        ("f", "e", "b", "5", "told"),
        ("f", "e", "b", "4", "told"),
        ("f", "e", "b", "0", POSSIBLY),
        ("f", "e", "c", "1", "told"),
        ("f", "e", "c", "0", POSSIBLY),
    ]
    assert _told_index(lines) == ({"f": {"a": "1", "b": "4", "c": "1"}}, {"f": {"a"}})
