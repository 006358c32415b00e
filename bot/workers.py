"""Several ``epmem run`` workers serving one owner from one PostgreSQL database.

One process per data folder needs nothing of this: SQLite's file lock makes it the only writer,
and a reply left in flight by a crash is settled at its next start (bot/inflight.py). Workers
behind one webhook URL share the state database (``EPMEM_DATABASE_URL``), and each can die at
any moment (``kill -9``), so what one worker was doing must be finished by another, once:

* **who is alive**: each worker beats (``workers.beat_at``) every few seconds; one whose last
  beat is older than the lease is dead. The lease is far longer than a beat (default 30 s
  against 3 s), so a busy event loop does not pass for a dead worker;
* **replies in flight**: a reply is audited before it is sent (epmem/audit/delivery.py); the
  worker that sends it keeps a row (``replies_in_flight``) until the platform's answer is
  recorded (:meth:`ConnectorState.record` deletes it). A row whose worker is dead is claimed
  by one live worker (a compare-and-set on the row's worker) and settled as at a restart:
  Slack's history says whether it went out (recorded as delivered) or not (sent now, once).
  A reply audited by a worker killed before it wrote its row has no row: one older than the
  lease, with no outcome and no row, is claimed the same way (an insert that only one worker
  wins), so the gap between the audit and the row loses nothing;
* **events**: a platform event is claimed once in ``seen_events`` (bot/seen_events.py), on
  the server for every worker;
* **scheduled jobs**: each task is claimed before it runs (bot/tasks.py :meth:`Tasks.claim`),
  the expiries are claims already, and the one daily digest is ensured under a lock.

The audit chain stays one chain: every append takes the owner's advisory lock (epmem/db).
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta

from epmem.db import Database, Migration, MigrationSet

from bot.clock import Clock, iso, utcnow

MIGRATIONS = MigrationSet(
    "workers",
    (
        Migration(
            1,
            "workers alive, and the replies each has in flight",
            """
        CREATE TABLE workers (
            id TEXT PRIMARY KEY,
            started_at TEXT NOT NULL,
            beat_at TEXT NOT NULL
        );
        CREATE TABLE replies_in_flight (
            audit_id TEXT PRIMARY KEY,
            worker TEXT NOT NULL,
            since TEXT NOT NULL
        )
        """,
            postgres="""
        CREATE TABLE workers (
            id TEXT PRIMARY KEY,
            started_at TEXT COLLATE "C" NOT NULL,
            beat_at TEXT COLLATE "C" NOT NULL
        );
        CREATE TABLE replies_in_flight (
            audit_id TEXT PRIMARY KEY,
            worker TEXT NOT NULL,
            since TEXT COLLATE "C" NOT NULL
        )
        """,
        ),
    ),
)

#: a worker whose last beat is older than this is dead (its replies in flight are taken over).
LEASE = timedelta(seconds=30)
#: how often a worker beats and looks for a dead worker's replies.
BEAT_EVERY = timedelta(seconds=3)
#: a dead worker's own row goes after this long.
FORGET_AFTER = timedelta(days=1)


def new_worker_id() -> str:
    """Readable in the logs (host and pid), unique across restarts of the same pid."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass(frozen=True, slots=True)
class Orphan:
    """A reply left in flight by a dead worker (``worker`` None: it never wrote its row)."""

    audit_id: str
    worker: str | None


class WorkerLease:
    """This worker's beat and its replies in flight, in the shared state database."""

    def __init__(
        self,
        db: Database,
        worker_id: str | None = None,
        *,
        lease: timedelta = LEASE,
        clock: Clock = utcnow,
    ) -> None:
        self.db = db
        self.id = worker_id or new_worker_id()
        self.lease = lease
        self.clock = clock

    async def beat(self) -> None:
        now = iso(self.clock())
        await self.db.execute(
            "INSERT INTO workers(id, started_at, beat_at) VALUES (?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET beat_at = excluded.beat_at",
            (self.id, now, now),
        )
        # a killed worker's row would stay forever; its replies' rows stand without it (orphans)
        await self.db.execute("DELETE FROM workers WHERE beat_at < ?", (iso(self.clock() - FORGET_AFTER),))

    async def retire(self) -> None:
        """A clean stop: this worker is gone at once (its rows, if any, are anyone's)."""
        await self.db.execute("DELETE FROM workers WHERE id = ?", (self.id,))

    def cutoff(self) -> datetime:
        """Beats before this are a dead worker's; replies audited before it are no longer new."""
        return self.clock() - self.lease

    async def alive(self) -> list[str]:
        rows = await self.db.fetchall("SELECT id FROM workers WHERE beat_at >= ? ORDER BY id", (iso(self.cutoff()),))
        return [str(r[0]) for r in rows]

    async def sending(self, audit_id: str) -> bool:
        """This worker is delivering the reply audited as ``audit_id``; False when another
        worker's row was there first."""
        taken = await self.db.execute(
            "INSERT INTO replies_in_flight(audit_id, worker, since) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (audit_id, self.id, iso(self.clock())),
        )
        return taken == 1

    async def settled(self, audit_id: str) -> None:
        await self.db.execute("DELETE FROM replies_in_flight WHERE audit_id = ?", (audit_id,))

    async def orphans(self) -> list[Orphan]:
        """Rows of workers that are dead (or retired), oldest first."""
        rows = await self.db.fetchall(
            "SELECT r.audit_id, r.worker FROM replies_in_flight r LEFT JOIN workers w ON w.id = r.worker "
            "WHERE w.id IS NULL OR w.beat_at < ? ORDER BY r.since, r.audit_id",
            (iso(self.cutoff()),),
        )
        return [Orphan(str(a), str(w)) for a, w in rows]

    async def tracked(self, audit_ids: list[str]) -> set[str]:
        """Which of these replies some worker has a row for."""
        found: set[str] = set()
        for start in range(0, len(audit_ids), 500):
            chunk = audit_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self.db.fetchall(f"SELECT audit_id FROM replies_in_flight WHERE audit_id IN ({marks})", chunk)
            found |= {str(r[0]) for r in rows}
        return found

    async def claim(self, orphan: Orphan) -> bool:
        """Take ``orphan`` over: True for exactly one of the workers that try (a row of no
        worker's is written as one's own; a dead worker's is moved by a compare-and-set)."""
        if orphan.worker is None:
            return await self.sending(orphan.audit_id)
        won = await self.db.execute(
            "UPDATE replies_in_flight SET worker = ?, since = ? WHERE audit_id = ? AND worker = ?",
            (self.id, iso(self.clock()), orphan.audit_id, orphan.worker),
        )
        return won == 1
