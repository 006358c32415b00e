"""Matters: events that belong together, so that what a person was told of one counts for the others.

Facts of one event are one matter; so are the facts of events linked here: the same news told in
several sessions, or a fact that names two events ("the deposit is paid with the bonus" links
the house and the bonus). The composite rule across replies (epmem/reply/cumulative.py) judges
what a reader already knows of a matter together with what a reply would add, so a link is
what stops "asked in two questions, told both".

Links are pairs of event ids, each with where it came from (``owner``, ``scenario``, ``ingest``,
``model``); a matter is a connected group of events. The owner links and unlinks by command
(/matter, /unmatter). A missed link fails open across replies for that pair of events, which is
why unlinking is the owner's alone and every link is shown to them (/annotations, the audit page).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import aiosqlite

from epmem.db import Database, Migration, MigrationSet, as_database

MIGRATIONS = MigrationSet(
    "event_links",
    (
        Migration(
            1,
            "links between events (one matter)",
            """
        CREATE TABLE event_links (
            a TEXT NOT NULL,
            b TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
            PRIMARY KEY (a, b)
        )
        """,
        ),
    ),
)

#: a link: (event, event, source), the two events in sorted order.
Link = tuple[str, str, str]


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True, slots=True)
class Matters:
    """A snapshot of the links: which events are one matter (union-find, roots precomputed)."""

    root: dict[str, str]

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> Matters:
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in pairs:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        return cls({x: find(x) for x in list(parent)})

    def matter(self, event_id: str) -> str:
        """The matter's id: its smallest event id (an unlinked event is its own matter)."""
        return self.root.get(event_id, event_id)

    def events(self, event_ids: Iterable[str]) -> set[str]:
        """These events and every event linked to them."""
        given = set(event_ids)
        wanted = {self.matter(e) for e in given}
        return given | {e for e, r in self.root.items() if r in wanted}

    def groups(self) -> list[list[str]]:
        """Every matter of more than one event, its events sorted (for the owner's views)."""
        out: dict[str, list[str]] = {}
        for e, r in self.root.items():
            out.setdefault(r, []).append(e)
        return sorted(sorted(v) for v in out.values() if len(v) > 1)


class EventLinks:
    """The links, in the state database (bot/state.py opens it and applies ``MIGRATIONS``)."""

    def __init__(self, db: Database | aiosqlite.Connection) -> None:
        self.db = as_database(db)

    async def link(self, events: Sequence[str], source: str) -> int:
        """Link every event to the first (one matter); returns how many links are new."""
        events = list(dict.fromkeys(e.strip() for e in events if e.strip()))
        if len(events) < 2:
            raise ValueError("a link needs two different events")
        added = 0
        for other in events[1:]:
            a, b = _pair(events[0], other)
            added += max(
                await self.db.execute(
                    "INSERT INTO event_links(a, b, source) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (a, b, source)
                ),
                0,
            )
        return added

    async def unlink(self, event: str, other: str | None = None) -> int:
        """Remove the link between two events, or every link of one event; returns how many."""
        if other is None:
            removed = await self.db.execute("DELETE FROM event_links WHERE a = ? OR b = ?", (event, event))
        else:
            removed = await self.db.execute("DELETE FROM event_links WHERE a = ? AND b = ?", _pair(event, other))
        return max(removed, 0)

    async def all(self) -> list[Link]:
        rows = await self.db.fetchall("SELECT a, b, source FROM event_links ORDER BY a, b")
        return [(str(a), str(b), str(s)) for a, b, s in rows]

    async def matters(self) -> Matters:
        return Matters.of((a, b) for a, b, _ in await self.all())
