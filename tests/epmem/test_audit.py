"""The audit log on a real SQLite file and a real PostgreSQL database: chain, tamper detection,
ledger, export; corruption (of a file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from epmem.audit.log import AuditCorrupted, AuditLog, export
from testkit.postgres import run_sql


async def test_chain_ledger_and_export(database_target: Path | str) -> None:
    async with AuditLog(database_target) as log:
        first = await log.append(
            "reply",
            {"question": "q1", "disclosed": ["f1"]},
            contact="leo",
            disclosed=[("f1", "e1")],
            recipients=["leo"],
        )
        second = await log.append(
            "reply",
            {"question": "q2", "disclosed": ["f2", "f3"]},
            contact="ana",
            disclosed=[("f2", "e1"), ("f3", "e2")],
            recipients=["ana", "raj"],
        )
        assert second.prev_hash == first.hash
        assert (await log.verify()) == (2, None)
        assert {(d.fact_id, d.recipient) for d in await log.who_knows("e1")} == {
            ("f1", "leo"),
            ("f2", "ana"),
            ("f2", "raj"),
        }
        assert [r.id for r in await log.records(contact="ana")] == [second.id]
        assert [r.id for r in await log.records(limit=1)] == [second.id]
        lines = export(await log.records(), "jsonl").splitlines()
        assert [json.loads(x)["question"] for x in lines] == ["q1", "q2"]
        with pytest.raises(ValueError):
            export([], "xml")


async def test_any_edit_breaks_the_chain_at_that_record(database_target: Path | str) -> None:
    path = database_target
    async with AuditLog(path) as log:
        ids = [(await log.append("reply", {"n": i})).id for i in range(4)]
    run_sql(path, "UPDATE audit SET body = ? WHERE id = ?", json.dumps({"n": 99}), ids[2])
    async with AuditLog(path) as log:
        n, bad = await log.verify()
        assert n == 2 and bad is not None and bad.id == ids[2]
    run_sql(path, "DELETE FROM audit WHERE id = ?", ids[2])
    async with AuditLog(path) as log:
        n, bad = await log.verify()
        assert bad is not None and bad.id == ids[3]


async def test_a_file_that_is_not_a_database_is_reported_as_corrupted(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    path.write_bytes(b"garbage" * 1000)
    with pytest.raises(AuditCorrupted, match="is corrupted"):
        await AuditLog(path).open()
    assert path.read_bytes() == b"garbage" * 1000


async def test_a_read_only_log_reads_the_chain_and_writes_nothing(database_target: Path | str) -> None:
    """The audit page's log: it reads what the bot wrote and cannot append, on either database."""
    with pytest.raises(AuditCorrupted):
        await AuditLog(database_target, readonly=True).open()  # nothing written yet: nothing to read
    async with AuditLog(database_target) as log:
        written = await log.append(
            "reply", {"question": "q1"}, contact="leo", disclosed=[("f1", "e1")], recipients=["leo"]
        )
    async with AuditLog(database_target, readonly=True) as page:
        assert [r.id for r in await page.records()] == [written.id]
        assert (await page.verify()) == (1, None)
        assert [d.recipient for d in await page.who_knows("f1")] == ["leo"]
        with pytest.raises(AuditCorrupted, match="cannot append"):
            await page.append("reply", {"question": "q2"}, contact="leo")
    async with AuditLog(database_target) as log:
        assert len(await log.records()) == 1
