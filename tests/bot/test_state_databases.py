"""The state database's tables on both databases: the same code, the same answers, on a SQLite
file and on a PostgreSQL schema (``EPMEM_DATABASE_URL``); and, on PostgreSQL, the claims that
several workers rely on (an event answered once, a consultation opened once, a task run once)
under writers on their own connections at the same instant."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.approvals import Approvals

from bot.consultations.store import ConsultConfig, ConsultationStore
from bot.seen_events import SeenEventLog
from bot.state import StateDB
from bot.tasks import Tasks
from epmem.audit.register import FactRegister
from epmem.db import with_schema
from epmem.ingest.journal import ImportJournal
from epmem.ingest.unread import Unread
from epmem.memory import Fact
from epmem.memory.links import EventLinks
from epmem.policy.overlay import Overlay
from epmem.policy.model import PolicyException
from testkit.postgres import EmbeddedPostgres

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def state_target(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    if request.param == "sqlite":
        return tmp_path / "state.sqlite"
    server: EmbeddedPostgres = request.getfixturevalue("postgres_server")
    return with_schema(server.database(), "state")


def _consultation(event: str, sender: str = "slack:U1", batch: str | None = None) -> dict[str, object]:
    return {
        "event_id": event,
        "facts": ["f1"],
        "platform": "slack",
        "chat_id": "D1",
        "chat_kind": "direct",
        "sender": sender,
        "contact": "leo",
        "contact_id": "leo",
        "audience": [sender],
        "question": "how is the plan?",
        "audit_id": "a1",
        "batch": batch,
    }


async def test_every_state_table_answers_alike_on_both_databases(state_target: Path | str) -> None:
    clock = lambda: NOW  # noqa: E731
    state = await StateDB(state_target).open()
    try:
        db = state.db
        seen = SeenEventLog(db, clock=clock)
        assert await seen.first_time("slack", "Ev1") and not await seen.first_time("slack", "Ev1")

        tasks = Tasks(db)
        first, second = await tasks.add("digest", NOW, {"n": 1}), await tasks.add("digest", NOW, {"n": 2})
        assert (first, second) == (1, 2)
        assert [t.payload["n"] for t in await tasks.due(NOW)] == [1, 2]
        assert await tasks.finish(first, "done", "ok", NOW) and not await tasks.finish(first, "done", "ok", NOW)

        store = ConsultationStore(db, ConsultConfig(max_open_per_asker=2), clock)
        lead = await store.open(**_consultation("ev-1"))  # type: ignore[arg-type]
        joined = await store.open(**_consultation("ev-1", "slack:U2"))  # type: ignore[arg-type]
        assert lead is not None and joined is not None and joined.lead == lead.id
        assert await store.open(**_consultation("ev-1")) is None  # type: ignore[arg-type]  # waits already
        assert [c.number for c in await store.find("2")] == [2] and (await store.find("1"))[0].id == lead.id
        assert await store.asked_since(NOW - timedelta(hours=1), "leo") == 1
        assert await store.asked_since(NOW - timedelta(hours=1), "leo", besides=lead.batch) == 0
        assert await store.settle(lead.id, "tell") and not await store.settle(lead.id, "tell")

        overlay = Overlay(db)
        exc = PolicyException(effect="allow", who=["leo"], fact="f1")
        assert [await overlay.add_exception(exc), await overlay.add_exception(exc)] == [1, 2]
        await overlay.set_flag("heard_it", {"enabled": False})
        assert await overlay.get_flag("heard_it") == {"enabled": False}

        links = EventLinks(db)
        assert await links.link(["ev-1", "ev-2", "ev-3"], "owner") == 2
        assert await links.link(["ev-1", "ev-2"], "owner") == 0
        assert await links.unlink("ev-1") == 2

        journal = ImportJournal(db)
        await journal.record_unread(
            "s1", [Unread("s1", 1, "leo", "hmm", "no fact"), Unread("s1", 1, "leo", "hmm", "again")]
        )
        assert await journal.unread_count() == 1

        register = FactRegister(db)
        await register.sync([Fact(id="f1", event_id="ev-1", text="Sam moves to Lisbon", category="life_events")])
        assert await register.keys(["LISBON"]) == [("ev-1", "f1")] and await register.keys(["Porto"]) == []

        approvals = Approvals(db, clock=clock)
        held = await approvals.hold(
            platform="slack",
            chat_id="D1",
            chat_kind="direct",
            sender="slack:U1",
            contact="leo",
            question="q",
            draft="d",
            disclosed=[("f1", "ev-1")],
            recipients=["slack:U1"],
            audit_id="a1",
        )
        assert await approvals.claim(held.id, "sent") is not None and await approvals.claim(held.id, "sent") is None
        assert await db.scrub("approvals")
    finally:
        await state.close()


async def test_workers_on_one_server_claim_each_thing_once(postgres_server: EmbeddedPostgres) -> None:
    """Eight connections, as eight workers would hold, race for the same event ids, the same
    consultation and the same task: each is won exactly once."""
    target = with_schema(postgres_server.database(), "state")
    workers = [await StateDB(target).open() for _ in range(8)]  # each migrates: once between them
    clock = lambda: NOW  # noqa: E731
    try:
        seen = [SeenEventLog(w.db, clock=clock) for w in workers]
        for n in range(20):
            won = await asyncio.gather(*(s.first_time("slack", f"Ev{n}") for s in seen))
            assert won.count(True) == 1

        stores = [ConsultationStore(w.db, clock=clock) for w in workers]
        opened = await asyncio.gather(*(s.open(**_consultation("ev-9")) for s in stores))  # type: ignore[arg-type]
        assert sum(c is not None for c in opened) == 1
        assert len(await stores[0].waiting_on(["ev-9"])) == 1

        task = await Tasks(workers[0].db).add("digest", NOW, {})
        finished = await asyncio.gather(*(Tasks(w.db).finish(task, "done", "ok", NOW) for w in workers))
        assert finished.count(True) == 1
    finally:
        for w in workers:
            await w.close()
