"""The consultation table (bot/consultations/store.py) on a real SQLite file: opens that race for
one (asker, event) make one row, rows are read by column name, the rows of one message to the
owner count once, and tables from before the delegation column was dropped, and from before
messages had several events, migrate forward with their rows."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from bot.clock import iso
from bot.consultations import MIGRATIONS, Consultation, ConsultationStore, ConsultConfig
from bot.consultations.store import TABLE
from epmem.sqlite import DatabaseError, MigrationSet, migrate, open_database

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _clock() -> datetime:
    return NOW


#: what ``_open`` opens (``event_id``, ``sender``, ``audience`` and ``audit_id`` its own).
_OPENED: dict[str, Any] = {
    "event_id": "ev-1",
    "facts": ["f1", "f2"],
    "platform": "telegram",
    "chat_id": "1",
    "chat_kind": "direct",
    "sender": "telegram:1",
    "contact": "leo",
    "contact_id": "leo",
    "audience": ["telegram:1"],
    "question": "How is Maya's knee?",
    "audit_id": "a1",
}


async def _open(
    store: ConsultationStore, sender: str = "telegram:1", event: str = "ev-1", audit: str = "a1"
) -> Consultation | None:
    return await store.open(**{**_OPENED, "event_id": event, "sender": sender, "audience": [sender], "audit_id": audit})


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ConsultationStore]:
    db = await open_database(tmp_path / "state.sqlite", [MIGRATIONS])
    try:
        yield ConsultationStore(db, ConsultConfig(max_open_per_asker=3), _clock)
    finally:
        await db.close()


async def test_two_opens_racing_for_one_asker_and_event_make_one_row(store: ConsultationStore) -> None:
    first, second = await asyncio.gather(_open(store, audit="a1"), _open(store, audit="a2"))
    assert [c is None for c in (first, second)].count(True) == 1
    assert len(await store.waiting_on(["ev-1"])) == 1


async def test_opens_racing_past_the_bound_stop_at_it(store: ConsultationStore) -> None:
    opened = await asyncio.gather(*(_open(store, event=f"ev-{i}", audit=f"a{i}") for i in range(6)))
    assert sum(c is not None for c in opened) == store.config.max_open_per_asker == 3
    assert len(await store.pending()) == 3


async def test_a_second_asker_joins_the_first_and_rows_read_back_by_name(store: ConsultationStore) -> None:
    lead = await _open(store)
    joined = await _open(store, sender="telegram:2")
    assert lead is not None and joined is not None
    assert lead.asked_owner and joined.lead == lead.id
    back = await store.get(joined.id)
    assert back is not None and back.number == 2
    assert (back.state, back.chat_kind, back.facts, back.audience) == ("open", "direct", ("f1", "f2"), ("telegram:2",))
    assert back.created_at == NOW and back.lead == lead.id and back.decided_at is None
    assert [c.id for c in await store.find("2")] == [joined.id]


async def test_a_table_from_before_keeps_its_rows_and_loses_the_delegation_column(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    first = MigrationSet(MIGRATIONS.name, MIGRATIONS.migrations[:1])
    async with aiosqlite.connect(str(path), isolation_level=None) as db:
        await migrate(db, first)
        await db.execute(
            "INSERT INTO consultations(id, state, created_at, expires_at, event_id, facts, platform, chat_id, "
            "chat_kind, sender, contact, audience, question, audit_id, delegation) VALUES ('c0ffee01', 'open', ?, ?, "
            "'ev-1', '[\"f1\"]', 'slack', 'D1', 'direct', 'slack:U1', 'leo', '[\"slack:U1\"]', 'Q?', 'a1', NULL)",
            (NOW.isoformat(), datetime(2026, 3, 2, tzinfo=UTC).isoformat()),
        )
    db = await open_database(path, [MIGRATIONS])
    try:
        async with db.execute("SELECT name FROM pragma_table_info('consultations')") as cur:
            columns = [r[0] async for r in cur]
        assert "delegation" not in columns and set(TABLE.columns) <= set(columns)
        kept = await ConsultationStore(db, clock=_clock).get("c0ffee01")
        assert kept is not None and (kept.platform, kept.facts, kept.question) == ("slack", ("f1",), "Q?")
    finally:
        await db.close()


async def test_rows_of_one_message_count_once_against_the_open_bound(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "state.sqlite", [MIGRATIONS])
    try:
        store = ConsultationStore(db, ConsultConfig(max_open_per_asker=1), _clock)
        first = await _open(store, event="ev-1")
        assert first is not None and first.batch == first.id
        second = await store.open(**{**_OPENED, "event_id": "ev-2", "batch": first.batch})
        assert second is not None and second.batch == first.batch
        assert await _open(store, event="ev-3") is None  # a message of its own: past the bound
        assert await store.open_count("leo") == 1 and await store.open_count("leo", first.batch) == 0
        assert await store.for_reply("a1") == 1
        assert [c.id for c in await store.in_batch(first.batch)] == [first.id, second.id]
    finally:
        await db.close()


async def test_rows_from_before_messages_had_several_events_are_each_a_message(tmp_path: Path) -> None:
    """Migration 3 adds the batch: each row from before is a message of its own (as it was)."""
    path = tmp_path / "state.sqlite"
    before = MigrationSet(MIGRATIONS.name, MIGRATIONS.migrations[:2])
    async with aiosqlite.connect(str(path), isolation_level=None) as db:
        await migrate(db, before)
        for cid, event, lead in (
            ("c0ffee01", "ev-1", None),
            ("c0ffee02", "ev-2", None),
            ("c0ffee03", "ev-1", "c0ffee01"),
        ):
            await db.execute(
                "INSERT INTO consultations(id, state, created_at, expires_at, event_id, facts, platform, chat_id, "
                "chat_kind, sender, contact, contact_id, audience, question, audit_id, lead) VALUES (?, 'open', ?, ?, "
                "?, '[\"f1\"]', 'slack', 'D1', 'direct', 'slack:U1', 'leo', 'leo', '[\"slack:U1\"]', 'Q?', 'a1', ?)",
                (cid, iso(NOW), iso(datetime(2026, 3, 2, tzinfo=UTC)), event, lead),
            )
    db = await open_database(path, [MIGRATIONS])
    try:
        async with db.execute("SELECT version FROM schema_migrations WHERE migration_set = 'consultations'") as cur:
            assert [r[0] async for r in cur] == [1, 2, 3]
        store = ConsultationStore(db, clock=_clock)
        kept = [await store.get(cid) for cid in ("c0ffee01", "c0ffee02", "c0ffee03")]
        assert [c.batch for c in kept if c is not None] == ["c0ffee01", "c0ffee02", "c0ffee03"]
        assert await store.for_reply("a1") == 3 and await store.open_count("leo") == 3
        assert await store.asked_since(NOW, "leo") == 2  # the joined row never asked the owner
    finally:
        await db.close()


async def test_a_row_with_an_unknown_state_is_refused_by_name(store: ConsultationStore, tmp_path: Path) -> None:
    c = await _open(store)
    assert c is not None
    other = sqlite3.connect(tmp_path / "state.sqlite")  # another writer, outside the program
    with closing(other), other:
        other.execute("UPDATE consultations SET state = 'lost' WHERE id = ?", (c.id,))
    with pytest.raises(DatabaseError, match=f"consultations row {c.id}: state 'lost'"):
        await store.get(c.id)
