"""The state database: one owner, one migrations table keyed by set, and old data folders carried forward.

``tests/fixtures/data-702941f`` is a data folder written by the code of commit 702941f (before
one migrations table): four per-table migration records, the Slack connector's own
``slack-events.sqlite``, and an owner's exceptions, contact overrides, a scheduled change, a
held reply and an audit chain (``made.json`` says what was done). It must open with nothing lost.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bot.runtime import Runtime
from bot.seen_events import SeenEventLog
from bot.state import StateDB
from connectors.base import Action
from epmem.sqlite import DatabaseError, Migration, MigrationSet, migrate, open_database
from testkit.house import TRUTH, house_runtime
from testkit.runtime import REPO, ask

LEGACY = REPO / "tests" / "fixtures" / "data-702941f"


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def recorded(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT migration_set, MAX(version) FROM schema_migrations GROUP BY migration_set"))


async def owner(runtime: Runtime, text: str) -> str:
    return (await runtime.agent.handle(ask("owner", text))).text or ""


async def test_a_data_folder_from_before_migrates_forward_without_loss(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(LEGACY, data, ignore=shutil.ignore_patterns("made.json"))
    made = json.loads((LEGACY / "made.json").read_text())
    held_id = next(text for asked, text in made["said"] if asked.startswith("leo:")).split()[2]
    clock = Clock(datetime.fromisoformat(made["made_at"]) + timedelta(hours=1))
    runtime = await house_runtime(data, clock=clock)
    try:
        assert recorded(data / "state.sqlite") == {
            "overlay": 2,
            "approvals": 2,
            "tasks": 1,
            "seen_events": 1,
            "connector_state": 2,
            "fact_register": 1,
            "ingest_journal": 2,
            "consultations": 3,  # 2: the never-set delegation column dropped; 3: the batch
            "event_links": 1,
        }
        assert not tables(data / "state.sqlite") & {"overlay_migrations", "approval_migrations", "task_migrations"}
        assert recorded(data / "audit.sqlite") == {"audit": 4} and "migrations" not in tables(data / "audit.sqlite")
        # the first-format records keep their hashes; one chained record seals them (epmem.audit.schema)
        records = await runtime.audit.records()
        assert [r.format for r in records] == [1] * made["audit_records"] + [2]
        assert records[-1].kind == "audit_migration" and records[-1].body["sealed"] == made["audit_records"]
        assert records[-1].body["first_bad"] is None
        assert not (data / "slack-events.sqlite").exists()
        assert not await runtime.seen_events.first_time("slack", "Ev-legacy-1")  # carried over
        # the owner's changes, as they were
        exceptions = await owner(runtime, "/exceptions")
        assert exceptions.startswith("1: allow raj on fact f1 until ") and "2: deny kim on fact f2" in exceptions
        assert runtime.policy.contacts["raj"].level == 2
        assert runtime.owner.directory.resolve("telegram:555").contact_id == "ana"
        assert "/level fact:f3 4" in await owner(runtime, "/scheduled")
        # the held reply can still be decided, and the chain goes on from where it was
        sent: list[str] = []

        async def console(chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
            sent.append(text)

        runtime.outbox.attach("console", console)
        assert held_id in await owner(runtime, "/pending")
        assert (await owner(runtime, f"/approve {held_id}")).startswith(f"Sent held reply {held_id}")
        assert len(sent) == 1 and TRUTH in sent[0]
        count, bad = await runtime.audit.verify()
        assert bad is None and count == made["audit_records"] + 2  # the seal's and the approval's records
    finally:
        await runtime.close()


async def test_a_garbage_state_database_is_one_clear_error_and_is_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    garbage = b"this is not a database at all" * 100
    (data / "state.sqlite").write_bytes(garbage)
    with pytest.raises(DatabaseError) as caught:
        await house_runtime(data)
    assert str(caught.value) == f"state database {data / 'state.sqlite'} is corrupted: file is not a database"
    assert (data / "state.sqlite").read_bytes() == garbage


async def test_a_schema_newer_than_the_program_is_refused(tmp_path: Path) -> None:
    state = await StateDB(tmp_path / "state.sqlite").open()
    await state.connection.execute(
        "INSERT INTO schema_migrations(migration_set, version, name) VALUES ('tasks', 9, 'from the future')"
    )
    await state.close()
    with pytest.raises(DatabaseError, match=r"tasks tables are at version 9, newer than this program knows \(1\)"):
        await StateDB(tmp_path / "state.sqlite").open()


async def test_each_migration_runs_in_its_own_transaction(tmp_path: Path) -> None:
    good = Migration(1, "one table", "CREATE TABLE a (x INTEGER)")
    bad = Migration(2, "half a change", "CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1)")
    db = await open_database(tmp_path / "x.sqlite", [MigrationSet("first", (good,))])
    try:
        with pytest.raises(sqlite3.OperationalError):
            await migrate(db, MigrationSet("first", (good, bad)))
    finally:
        await db.close()
    assert tables(tmp_path / "x.sqlite") == {"schema_migrations", "a"}  # no b: the failed one left nothing
    assert recorded(tmp_path / "x.sqlite") == {"first": 1}


async def test_two_sets_share_one_table_without_colliding(tmp_path: Path) -> None:
    one = MigrationSet("one", (Migration(1, "t1", "CREATE TABLE t1 (x)"),))
    two = MigrationSet("two", (Migration(1, "t2", "CREATE TABLE t2 (x)"), Migration(2, "t3", "CREATE TABLE t3 (x)")))
    db = await open_database(tmp_path / "x.sqlite", [one, two])
    try:
        assert await migrate(db, one, two) == {"one": 1, "two": 2}  # again: nothing to do
    finally:
        await db.close()
    assert recorded(tmp_path / "x.sqlite") == {"one": 1, "two": 2}


async def test_seen_events_are_claimed_once_across_a_restart_and_pruned(tmp_path: Path) -> None:
    clock = Clock(datetime.fromisoformat("2026-06-01T12:00:00+00:00"))
    state = await StateDB(tmp_path / "state.sqlite").open()
    seen = SeenEventLog(state.connection, clock=clock)
    assert await seen.first_time("slack", "Ev1") and not await seen.first_time("slack", "Ev1")
    assert await seen.first_time("telegram", "Ev1")  # one platform's ids never hide another's
    await state.close()
    state = await StateDB(tmp_path / "state.sqlite").open()
    try:
        seen = SeenEventLog(state.connection, clock=clock)
        assert not await seen.first_time("slack", "Ev1")
        clock.now += timedelta(days=3)
        await seen.prune()
        assert await seen.first_time("slack", "Ev1")  # older than the retention: forgotten
    finally:
        await state.close()
