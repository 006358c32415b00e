"""Several workers append to one owner's chain at once, each on a connection of its own (issue 42):
the records form one chain, with no fork and no gap, and verify passes.

On SQLite the workers share the file's write lock (BEGIN IMMEDIATE); on PostgreSQL they share
the schema's advisory lock (epmem.db.postgres), and the last test shows that lock is what keeps
the chain whole.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from epmem.audit.log import AuditLog
from epmem.db import connect_to, is_postgres_url

WORKERS = 4
EACH = 25


async def _open(target: Path | str) -> list[AuditLog]:
    """The workers' logs. On PostgreSQL they open together, so their migrations race too; a
    SQLite file is one owner's, opened by one process at a time (its connection switches the
    file to WAL before it waits on a lock), so its workers open one after another."""
    if is_postgres_url(target):
        opened = await asyncio.gather(*(AuditLog(target).open() for _ in range(WORKERS)), return_exceptions=True)
        logs = [log for log in opened if isinstance(log, AuditLog)]
        failed = [e for e in opened if isinstance(e, BaseException)]
        if failed:
            for log in logs:
                await log.close()
            raise failed[0]
        return logs
    return [await AuditLog(target).open() for _ in range(WORKERS)]


async def _run_workers(target: Path | str) -> None:
    """Open the workers' logs, then append from all of them at once."""
    logs = await _open(target)
    try:
        await asyncio.gather(
            *(
                log.append(
                    "reply",
                    {"question": f"w{w} q{n}", "disclosed": [f"f{w}"]},
                    contact=f"c{w}",
                    disclosed=[(f"f{w}", "e1")],
                    recipients=[f"c{w}"],
                )
                for n in range(EACH)
                for w, log in enumerate(logs)
            )
        )
    finally:
        for log in logs:
            await log.close()


async def _chain(target: Path | str) -> list[tuple[int, str, str]]:
    db = await connect_to(target)
    try:
        return [
            (int(r[0]), r[1], r[2]) for r in await db.fetchall("SELECT seq, prev_hash, hash FROM audit ORDER BY seq")
        ]
    finally:
        await db.close()


async def test_workers_on_their_own_connections_append_one_chain(database_target: Path | str) -> None:
    await _run_workers(database_target)
    rows = await _chain(database_target)
    total = WORKERS * EACH
    assert [seq for seq, _, _ in rows] == list(range(1, total + 1))  # no gap
    assert len({prev for _, prev, _ in rows}) == total  # no fork: no two records follow one
    assert all(prev == rows[i - 1][2] for i, (_, prev, _) in enumerate(rows) if i)
    async with AuditLog(database_target) as log:
        assert await log.verify() == (total, None)
        assert len(await log.who_knows("e1")) == total


async def test_without_the_advisory_lock_postgres_workers_fork_the_chain(
    postgres_server: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above sees what it checks: with the lock taken away (a statement that locks
    nothing), the workers read the same last record and both chain to it."""
    from testkit.postgres import EmbeddedPostgres

    assert isinstance(postgres_server, EmbeddedPostgres)
    url = postgres_server.database()
    async with AuditLog(url):  # migrated first, with the lock
        pass
    monkeypatch.setattr("epmem.db.postgres._LOCK", "SELECT ?::text")
    await _run_workers(url)
    rows = await _chain(url)
    assert len(rows) == WORKERS * EACH
    assert len({prev for _, prev, _ in rows}) < len(rows)
    async with AuditLog(url) as log:
        assert (await log.verify())[1] is not None
