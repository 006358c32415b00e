"""Platform event ids already handled, kept in the state database so a redelivery is answered once.

Slack acknowledges an event before our listener runs, so a slow or failed delivery comes back
(``X-Slack-Retry-Num``) and a second worker or a restart must not answer it again. The
connector asks :meth:`SeenEventLog.first_time` (the ``connectors.base.SeenEvents`` protocol); it
never opens the database itself. Ids older than the platforms' retry windows are pruned.
"""

from __future__ import annotations

from datetime import timedelta

import aiosqlite

from epmem.db import Database, Migration, MigrationSet, as_database

from bot.clock import Clock, iso, utcnow

MIGRATIONS = MigrationSet(
    "seen_events",
    (
        Migration(
            1,
            "platform event ids already handled",
            """
        CREATE TABLE seen_events (
            platform TEXT NOT NULL,
            event_id TEXT NOT NULL,
            seen_at TEXT NOT NULL,
            PRIMARY KEY (platform, event_id)
        );
        CREATE INDEX seen_events_time ON seen_events(seen_at)
        """,
        ),
    ),
)

#: Slack retries for minutes; two days is a wide margin.
RETENTION = timedelta(days=2)
_PRUNE_EVERY = 200


class SeenEventLog:
    def __init__(
        self, db: Database | aiosqlite.Connection, retention: timedelta = RETENTION, clock: Clock = utcnow
    ) -> None:
        self._db = as_database(db)
        self.retention = retention
        self.clock = clock
        self._claims = 0

    async def first_time(self, platform: str, event_id: str) -> bool:
        """Claim ``event_id``: True the first time it is seen (by anyone sharing the database)."""
        claimed = await self._db.execute(
            "INSERT INTO seen_events(platform, event_id, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (platform, event_id, iso(self.clock())),
        )
        if claimed != 1:
            return False
        if self._claims % _PRUNE_EVERY == 0:
            await self.prune()
        self._claims += 1
        return True

    async def prune(self) -> None:
        """Forget ids older than the retention."""
        await self._db.execute("DELETE FROM seen_events WHERE seen_at < ?", (iso(self.clock() - self.retention),))
