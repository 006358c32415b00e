"""Workers sharing one PostgreSQL state database (bot/workers.py): who is alive, a dead worker's
replies in flight taken over by exactly one live worker, and scheduled work done once whichever
workers' alarm clocks fire (two runtimes in one process, each its own connection, as two
processes would hold)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.runtime import Runtime
from bot.scheduler import Scheduler
from bot.state import StateDB
from bot.workers import Orphan, WorkerLease
from connectors.base import Action
from epmem.db import with_schema
from testkit.house import house_runtime
from testkit.postgres import EmbeddedPostgres

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def test_a_dead_worker_s_replies_go_to_exactly_one_live_worker(postgres_server: EmbeddedPostgres) -> None:
    target = with_schema(postgres_server.database(), "state")
    states = [await StateDB(target).open() for _ in range(3)]
    clock = Clock(NOW)
    try:
        dead, *live = [
            WorkerLease(s.db, f"w{i}", lease=timedelta(seconds=30), clock=clock) for i, s in enumerate(states)
        ]
        for lease in (dead, *live):
            await lease.beat()
        await dead.sending("audit-1")
        await live[0].sending("audit-2")
        assert await live[0].orphans() == []  # everyone beat just now
        clock.now += timedelta(seconds=20)
        for lease in live:
            await lease.beat()
        clock.now += timedelta(seconds=15)  # the dead worker's last beat is 35 s old, the others' 15 s
        assert await live[0].alive() == ["w1", "w2"]
        assert await live[1].orphans() == [Orphan("audit-1", "w0")]
        won = await asyncio.gather(*(lease.claim(Orphan("audit-1", "w0")) for lease in live))
        assert sorted(won) == [False, True]
        assert await live[0].orphans() == []  # the winner's now, and the winner is alive
        assert await live[0].tracked(["audit-1", "audit-2", "audit-3"]) == {"audit-1", "audit-2"}
        # a reply audited by a worker that died before it wrote its row: one claim wins
        won = await asyncio.gather(*(lease.claim(Orphan("audit-3", None)) for lease in live))
        assert sorted(won) == [False, True]
        await live[1].retire()  # a clean stop: its rows are anyone's at once
        assert {o.audit_id for o in await live[0].orphans()} <= {"audit-1", "audit-3"}
        assert await live[0].alive() == ["w1"]
        clock.now += timedelta(days=2)
        await live[0].beat()  # a day later the dead worker's own row is gone; its reply's row stays an orphan
        assert await states[0].db.fetchall("SELECT id FROM workers") == [("w1",)]
        rows = await states[0].db.fetchall("SELECT audit_id, worker FROM replies_in_flight")
        assert set(await live[0].orphans()) == {Orphan(a, w) for a, w in rows if w != "w1"}
    finally:
        for s in states:
            await s.close()


@dataclass
class TwoWorkers:
    """Two runtimes on one server (two workers' worth) and what their schedulers told the owner."""

    runtimes: list[Runtime]
    notes: list[str] = field(default_factory=list)

    async def note(self, text: str, actions: tuple[Action, ...] = ()) -> None:
        self.notes.append(text)

    def schedulers(self, lease: timedelta | None) -> list[Scheduler]:
        return [
            Scheduler(r.owner, r.commands, self.note, workers_lease=lease, clock=lambda: NOW) for r in self.runtimes
        ]

    async def due_commands(self, n: int) -> list[int]:
        tasks = self.runtimes[0].owner.tasks
        return [await tasks.add("command", NOW - timedelta(minutes=1), {"text": "/exceptions"}) for _ in range(n)]

    def done(self, ids: list[int]) -> list[int]:
        return [n for n in ids for text in self.notes if text.startswith(f"Scheduled change {n} done")]


@pytest.fixture
async def two_workers(tmp_path: Path, postgres_server: EmbeddedPostgres) -> AsyncIterator[TwoWorkers]:
    url = SecretStr(postgres_server.database())
    runtimes = [await house_runtime(tmp_path / f"w{i}", database_url=url) for i in range(2)]
    try:
        yield TwoWorkers(runtimes)
    finally:
        for r in runtimes:
            await r.close()


async def test_two_workers_run_each_scheduled_task_once_and_keep_one_digest(two_workers: TwoWorkers) -> None:
    schedulers = two_workers.schedulers(timedelta(seconds=30))
    await asyncio.gather(*(s.ensure_digest() for s in schedulers))
    assert len(await two_workers.runtimes[0].owner.tasks.pending("digest")) == 1  # not one each
    ids = await two_workers.due_commands(5)
    for _ in range(3):  # both alarm clocks fire, again and again
        await asyncio.gather(*(s.run_due(NOW) for s in schedulers))
    assert sorted(two_workers.done(ids)) == ids
    states = [await two_workers.runtimes[1].owner.tasks.get(n) for n in ids]
    assert [t.state if t is not None else None for t in states] == ["done"] * len(ids)


async def test_without_the_claims_two_workers_run_each_task_twice(two_workers: TwoWorkers) -> None:
    """The control: the same two schedulers, as one process runs its own (no lease), run every
    due task once each: what the claim prevents shows."""
    schedulers = two_workers.schedulers(None)
    ids = await two_workers.due_commands(3)
    await asyncio.gather(*(s.run_due(NOW) for s in schedulers))
    assert len(two_workers.done(ids)) > len(ids)
