"""The state database (``data/state.sqlite``, or a schema on a PostgreSQL server): one owner, one
connection, every table's migrations.

The owner's changes (the overlay's exceptions, flags and contact overrides), held replies,
scheduled tasks, the platform event ids already handled, and what the connectors keep (routes,
undelivered messages) all live in this one database. This module is the only code that opens
it: it applies every part's migration set (recorded in one ``schema_migrations`` table, see
epmem/db/migrate.py) and hands the connection to the parts.

A data folder written before there was one owner is migrated forward on first open: the
per-table migration records are adopted, and the Slack connector's old ``slack-events.sqlite``
is copied in and removed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite
import structlog

from epmem.audit import FACT_REGISTER_MIGRATIONS as FACT_REGISTER
from epmem.ingest import JOURNAL_MIGRATIONS as INGEST_JOURNAL
from epmem.memory import LINKS_MIGRATIONS as EVENT_LINKS
from epmem.policy import OVERLAY_MIGRATIONS as OVERLAY
from epmem.db import Database, SQLiteDatabase, is_postgres_url, open_database

from bot.approvals import MIGRATIONS as APPROVALS
from bot.connector_state import MIGRATIONS as CONNECTOR_STATE
from bot.consultations.store import MIGRATIONS as CONSULTATIONS
from bot.seen_events import MIGRATIONS as SEEN_EVENTS
from bot.tasks import MIGRATIONS as TASKS
from bot.workers import MIGRATIONS as WORKERS

log = structlog.get_logger(__name__)

SETS = (
    OVERLAY,
    APPROVALS,
    TASKS,
    SEEN_EVENTS,
    CONNECTOR_STATE,
    FACT_REGISTER,
    INGEST_JOURNAL,
    CONSULTATIONS,
    EVENT_LINKS,
)
#: several workers share a state database on a server only (bot/workers.py): a SQLite file
#: serves one process, and its tables stay exactly what they were.
SHARED_SETS = (*SETS, WORKERS)
#: where the Slack connector kept its event ids before (its own file in the data folder).
LEGACY_SLACK_EVENTS = "slack-events.sqlite"


#: the state tables that hold words an erasure must not leave behind (held drafts, queued
#: replies, consultations, the fact register, unread statements): what a scrub rewrites on a
#: server (a SQLite file is scrubbed whole).
WORDED_TABLES = ("approvals", "undelivered", "consultations", "fact_register", "ingest_unread")


class StateDB:
    """The state database: a SQLite file (the embedded default) or a schema on a PostgreSQL
    server (``EPMEM_DATABASE_URL``: what several workers share)."""

    def __init__(self, target: Path | str) -> None:
        self.target: Path | str = target if is_postgres_url(target) else Path(target)
        self._db: Database | None = None

    @property
    def path(self) -> Path:
        """The SQLite file (a state database on a server has none)."""
        if isinstance(self.target, str):
            raise ValueError("the state database is on a server, not in a file")
        return self.target

    async def open(self) -> StateDB:
        sets = SHARED_SETS if isinstance(self.target, str) else SETS
        self._db = await open_database(self.target, sets, "state database")
        if isinstance(self.target, Path):
            await self._import_slack_events(self.target.parent / LEGACY_SLACK_EVENTS)
        return self

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("the state database is not open")
        return self._db

    @property
    def connection(self) -> aiosqlite.Connection:
        """The aiosqlite connection under a SQLite state database (tests and the legacy import)."""
        db = self.db
        if not isinstance(db, SQLiteDatabase):
            raise ValueError("the state database is on a server: use .db")
        return db.connection

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def _import_slack_events(self, legacy: Path) -> None:
        """Copy the old dedup file's event ids in, then remove the file. A file that cannot be
        read is left where it is (with a warning): losing it only risks a repeated answer."""
        if not legacy.exists():
            return
        db = self.connection
        try:
            await db.execute("ATTACH DATABASE ? AS legacy", (str(legacy),))
            try:
                async with db.execute("SELECT 1 FROM legacy.sqlite_master WHERE name = 'slack_events'") as cur:
                    has_table = await cur.fetchone() is not None
                if has_table:
                    await db.execute(
                        "INSERT OR IGNORE INTO seen_events(platform, event_id, seen_at) "
                        "SELECT 'slack', event_id, seen_at FROM legacy.slack_events"
                    )
            finally:
                await db.execute("DETACH DATABASE legacy")
        except sqlite3.DatabaseError as exc:
            log.warning("state.legacy_import_failed", file=str(legacy), error=str(exc))
            return
        for suffix in ("", "-wal", "-shm"):
            Path(f"{legacy}{suffix}").unlink(missing_ok=True)
        log.info("state.legacy_imported", file=str(legacy))
