"""The disclosure ledger is checked against the chain (issue 21): after deleting, editing, adding
or duplicating any row of ``disclosures``, verify fails and names the row and its record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from epmem.audit import ledger as ledger_module
from epmem.audit.log import AuditLog
from epmem.audit.verify import ChainWatcher, check
from testkit.postgres import run_sql


async def _write(path: Path | str) -> list[str]:
    async with AuditLog(path) as log:
        ids = [
            (
                await log.append(
                    "reply",
                    {"question": "q1", "disclosed": ["d5"]},
                    contact="jamie",
                    disclosed=[("d5", "e5")],
                    recipients=["jamie"],
                )
            ).id,
            (await log.append("reply", {"question": "q2"}, contact="tom")).id,
            (
                await log.append(
                    "reply",
                    {"question": "q3", "disclosed": ["d1", "d2"]},
                    contact="ana",
                    disclosed=[("d1", "e1"), ("d2", "e1")],
                    recipients=["ana", "raj"],
                )
            ).id,
        ]
        status = await check(log)
        assert status.ok and status.verified == 3
        assert len(await log.who_knows("d5")) == 1
    return ids


_sql = run_sql


TAMPERING: dict[str, tuple[Callable[[list[str]], tuple[str, tuple[object, ...]]], int, str]] = {
    "delete jamie's rows": (
        lambda ids: ("DELETE FROM disclosures WHERE recipient = ?", ("jamie",)),
        0,
        "row (fact d5, recipient jamie) is missing",
    ),
    "delete one of several": (
        lambda ids: ("DELETE FROM disclosures WHERE fact_id = ? AND recipient = ?", ("d2", "raj")),
        2,
        "row (fact d2, recipient raj) is missing",
    ),
    "edit the recipient": (
        lambda ids: ("UPDATE disclosures SET recipient = ? WHERE recipient = ?", ("tom", "jamie")),
        0,
        "row (fact d5, recipient jamie): its recipient was changed from jamie to tom",
    ),
    "edit the time": (
        lambda ids: ("UPDATE disclosures SET time = ? WHERE fact_id = ?", ("2020-01-01", "d5")),
        0,
        "row (fact d5, recipient jamie): its time was changed from 20",  # the record's time
    ),
    "edit the event": (
        lambda ids: ("UPDATE disclosures SET event_id = ? WHERE fact_id = ?", ("e9", "d5")),
        0,
        "row (fact d5, recipient jamie): its event was changed from e5 to e9",
    ),
    "edit the fact": (
        lambda ids: ("UPDATE disclosures SET fact_id = ? WHERE fact_id = ? AND recipient = ?", ("d3", "d2", "raj")),
        2,
        "row (fact d2, recipient raj): its fact was changed from d2 to d3",
    ),
    "add a row to a record": (
        lambda ids: ("INSERT INTO disclosures VALUES (?, 'd9', 'e9', 'tom', 'x')", (ids[1],)),
        1,
        "row (fact d9, recipient tom) was not disclosed by this record",
    ),
    "duplicate a row": (
        lambda ids: ("INSERT INTO disclosures SELECT * FROM disclosures WHERE recipient = ?", ("jamie",)),
        0,
        "row (fact d5, recipient jamie) was not disclosed",
    ),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
async def test_any_change_to_the_ledger_fails_verify_and_names_it(database_target: Path | str, case: str) -> None:
    path = database_target
    ids = await _write(path)
    make, index, reason = TAMPERING[case]
    statement, args = make(ids)
    _sql(path, statement, *args)
    async with AuditLog(path) as log:
        status = await check(log)
    assert not status.ok and status.first_bad is not None
    assert status.first_bad.id == ids[index]
    assert status.reason is not None and status.reason.startswith("disclosure ledger: ") and reason in status.reason
    assert status.verified == 3  # the chain itself is intact


async def test_a_row_for_a_record_that_does_not_exist(database_target: Path | str) -> None:
    path = database_target
    await _write(path)
    _sql(path, "INSERT INTO disclosures VALUES ('nosuchrecord', 'd5', 'e5', 'tom', 'x')")
    async with AuditLog(path) as log:
        status = await check(log)
    assert not status.ok and "names record nosuchrecord, which does not exist" in (status.reason or "")


async def test_the_page_watcher_checks_the_rows_of_new_records_incrementally(database_target: Path | str) -> None:
    path = database_target
    await _write(path)
    async with AuditLog(path) as log:
        watcher = ChainWatcher()
        assert (await watcher.advance(log)).ok
        late = await log.append(
            "reply", {"question": "q4"}, contact="leo", disclosed=[("d7", "e7")], recipients=["leo"]
        )
        assert (await watcher.advance(log)).ok
        await log.db.execute("DELETE FROM disclosures WHERE audit_id = ?", (late.id,))
        watcher.reset()
        status = await watcher.advance(log)
        assert not status.ok and status.first_bad is not None and status.first_bad.id == late.id


async def test_rows_written_before_the_ledger_was_chained_are_sealed_once(
    database_target: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database from before this version: its records state no ledger. Opening it seals their
    rows in one chained record; from then on a change to them fails verify, naming the seal."""
    path = database_target
    with monkeypatch.context() as old_code:
        old_code.setattr("epmem.audit.log.ledger_body", lambda disclosed, recipients: None)
        await _write_unchecked(path)
    # what migration 4 records when it runs on such a database: its records so far
    _sql(path, "INSERT INTO ledger_legacy(upto) SELECT max(seq) FROM audit")
    async with AuditLog(path) as log:
        status = await check(log)
        assert status.ok and status.verified == 4
        [seal] = await log.records(kind=ledger_module.SEAL_KIND)
        assert seal.body["rows"] == 5
    async with AuditLog(path) as log:  # sealed once, not at every open
        assert len(await log.records(kind=ledger_module.SEAL_KIND)) == 1
    _sql(path, "DELETE FROM disclosures WHERE recipient = 'jamie'")
    async with AuditLog(path) as log:
        status = await check(log)
    assert not status.ok and status.first_bad is not None and status.first_bad.id == seal.id
    assert "the 5 rows sealed" in (status.reason or "")


async def _write_unchecked(path: Path | str) -> None:
    async with AuditLog(path) as log:
        await log.append("reply", {"question": "q1"}, contact="jamie", disclosed=[("d5", "e5")], recipients=["jamie"])
        await log.append("reply", {"question": "q2"}, contact="tom")
        await log.append(
            "reply",
            {"question": "q3"},
            contact="ana",
            disclosed=[("d1", "e1"), ("d2", "e1")],
            recipients=["ana", "raj"],
        )
