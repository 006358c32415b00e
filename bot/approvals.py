"""Approval mode: replies that would disclose deep facts wait for the owner.

The owner sets a level (``/approval 2``); a reply that would disclose any fact at that level or
deeper (a smaller number) is not sent. It is stored here, in the state database beside the
overlay, and offered to the owner with approve / edit / reject. Storing it (rather than keeping
it in memory) is what lets a held reply survive a restart and still expire on time.

A held reply is claimed by one atomic ``UPDATE ... WHERE state = 'pending'``, so a double click
or two workers can never send it twice.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
import aiosqlite

from connectors.base import Action
from epmem.db import Database, Migration, MigrationSet, as_database

from bot.clock import Clock, iso, utcnow
from bot.quoting import quote
from bot.tables import Row, Table

#: overlay flag holding the approval level (None: approval mode off).
APPROVAL_FLAG = "approval_level"

MIGRATIONS = MigrationSet(
    "approvals",
    (
        Migration(
            1,
            "held replies",
            """
        CREATE TABLE approvals (
            id TEXT PRIMARY KEY,
            state TEXT NOT NULL DEFAULT 'pending',
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            decided_at TEXT,
            platform TEXT NOT NULL,
            chat_id TEXT NOT NULL,
            chat_kind TEXT NOT NULL,
            sender TEXT NOT NULL,
            contact TEXT NOT NULL,
            question TEXT NOT NULL,
            draft TEXT NOT NULL,
            disclosed TEXT NOT NULL,
            recipients TEXT NOT NULL,
            audit_id TEXT NOT NULL,
            final TEXT
        );
        CREATE INDEX approvals_pending ON approvals(state, expires_at)
        """,
        ),
        Migration(
            2,
            "held replies sent as the owner",
            # 'dm' or 'mention' when the reply would go out from the owner's own account
            "ALTER TABLE approvals ADD COLUMN delegation TEXT",
        ),
    ),
    legacy_table="approval_migrations",
)


@dataclass(frozen=True, slots=True)
class Held:
    """One reply waiting for the owner (or already decided)."""

    id: str
    state: str
    created_at: datetime
    expires_at: datetime
    platform: str
    chat_id: str
    chat_kind: str
    sender: str
    contact: str
    question: str
    draft: str
    #: (fact id, event id) pairs the draft discloses; written to the ledger only when sent.
    disclosed: tuple[tuple[str, str], ...]
    recipients: tuple[str, ...]
    audit_id: str
    final: str | None = None
    #: set when the reply goes out as the owner (see connectors.base.Delegation).
    delegation: str | None = None

    def note(self) -> str:
        """What the owner is shown: who asked what, the draft, and how to answer."""
        facts = ", ".join(f for f, _ in self.disclosed)
        return (
            f"Held reply {self.id} to {self.contact} ({self.platform}, {self.chat_kind} chat"
            f"{', sent as you' if self.delegation else ''}, "
            f"readers: {', '.join(self.recipients)}).\n"
            f"Asked: \u201c{quote(self.question)}\u201d\n"
            f"Draft: {self.draft}\n"
            f"Discloses: {facts}. Expires {self.expires_at:%Y-%m-%d %H:%M} UTC.\n"
            f"/approve {self.id} | /edit {self.id} NEW TEXT | /reject {self.id}"
        )

    def actions(self) -> tuple[Action, ...]:
        return (
            Action("Approve", f"/approve {self.id}"),
            Action("Edit", f"/edit {self.id}"),
            Action("Reject", f"/reject {self.id}"),
        )


TABLE = Table(
    "approvals",
    (
        "id",
        "state",
        "created_at",
        "expires_at",
        "platform",
        "chat_id",
        "chat_kind",
        "sender",
        "contact",
        "question",
        "draft",
        "disclosed",
        "recipients",
        "audit_id",
        "final",
        "delegation",
    ),
)


def _row(row: Row) -> Held:
    return Held(
        **{k: row[k] for k in TABLE.columns if k not in _DECODED},
        created_at=datetime.fromisoformat(row["created_at"]),
        expires_at=datetime.fromisoformat(row["expires_at"]),
        disclosed=tuple((f, e) for f, e in json.loads(row["disclosed"])),
        recipients=tuple(json.loads(row["recipients"])),
    )


#: the columns stored as text that a field reads decoded (times, JSON lists).
_DECODED = ("created_at", "expires_at", "disclosed", "recipients")


class Approvals:
    """The held-reply table, in the state database (bot/state.py owns the connection)."""

    def __init__(
        self, db: Database | aiosqlite.Connection, ttl: timedelta = timedelta(hours=24), clock: Clock = utcnow
    ) -> None:
        self._db = as_database(db)
        self.ttl = ttl
        self.clock = clock

    async def hold(
        self,
        *,
        platform: str,
        chat_id: str,
        chat_kind: str,
        sender: str,
        contact: str,
        question: str,
        draft: str,
        disclosed: Sequence[tuple[str, str]],
        recipients: Sequence[str],
        audit_id: str,
        approval_id: str | None = None,
        delegation: str | None = None,
    ) -> Held:
        now = self.clock()
        held = Held(
            id=approval_id or new_id(),
            state="pending",
            created_at=now,
            expires_at=now + self.ttl,
            platform=platform,
            chat_id=chat_id,
            chat_kind=chat_kind,
            sender=sender,
            contact=contact,
            question=question,
            draft=draft,
            disclosed=tuple((f, e) for f, e in disclosed),
            recipients=tuple(recipients),
            audit_id=audit_id,
            delegation=delegation,
        )
        await TABLE.insert(
            self._db,
            {
                "id": held.id,
                "state": held.state,
                "created_at": iso(held.created_at),
                "expires_at": iso(held.expires_at),
                "platform": platform,
                "chat_id": chat_id,
                "chat_kind": chat_kind,
                "sender": sender,
                "contact": contact,
                "question": question,
                "draft": draft,
                "disclosed": json.dumps([list(d) for d in held.disclosed]),
                "recipients": json.dumps(list(held.recipients)),
                "audit_id": audit_id,
                "final": None,
                "delegation": delegation,
            },
        )
        return held

    async def get(self, approval_id: str) -> Held | None:
        row = await TABLE.one(self._db, TABLE.select("id = ?"), (approval_id,))
        return _row(row) if row else None

    async def pending(self) -> list[Held]:
        return [_row(r) for r in await TABLE.rows(self._db, TABLE.select("state = 'pending'", "ORDER BY created_at"))]

    async def claim(
        self, approval_id: str, state: str, final: str | None = None, now: datetime | None = None
    ) -> Held | None:
        """Move a pending, unexpired reply to ``state``; None if it was not pending (any more)."""
        now = now or self.clock()
        changed = await self._db.execute(
            "UPDATE approvals SET state = ?, decided_at = ?, final = ? "
            "WHERE id = ? AND state = 'pending' AND expires_at > ?",
            (state, iso(now), final, approval_id, iso(now)),
        )
        if changed != 1:
            return None
        return await self.get(approval_id)

    async def unclaim(self, approval_id: str) -> None:
        """Back to pending (the reply could not be delivered; the owner may try again)."""
        await self._db.execute(
            "UPDATE approvals SET state = 'pending', decided_at = NULL, final = NULL WHERE id = ?", (approval_id,)
        )

    async def expire_due(self, now: datetime) -> list[Held]:
        """Every pending reply whose time is up, marked expired (each returned once)."""
        sql = TABLE.select("state = 'pending' AND expires_at <= ?")
        due = [_row(r) for r in await TABLE.rows(self._db, sql, (iso(now),))]
        expired = []
        for held in due:
            changed = await self._db.execute(
                "UPDATE approvals SET state = 'expired', decided_at = ? WHERE id = ? AND state = 'pending'",
                (iso(now), held.id),
            )
            if changed == 1:
                expired.append(held)
        return expired

    async def drop_disclosing(self, fact_ids: Sequence[str], now: datetime | None = None) -> list[str]:
        """Withdraw pending drafts that would tell a fact the owner just erased."""
        wanted = set(fact_ids)
        dropped = []
        for held in await self.pending():
            if wanted & {f for f, _ in held.disclosed}:
                if await self.claim(held.id, "withdrawn", now=now) is not None:
                    dropped.append(held.id)
        return dropped

    async def erase_texts(self, fact_ids: Sequence[str], sentences: Sequence[str]) -> int:
        """/forget: blank the question, draft and final text of every held reply, in any state,
        that would have told one of these facts or quotes one of their sentences. The row stays
        (ids and states are the approval's history); the words go. Returns how many rows."""
        wanted = set(fact_ids)
        needles = [s.strip().casefold() for s in sentences if s.strip()]
        hit = []
        for rid, question, draft, final, disclosed in await self._db.fetchall(
            "SELECT id, question, draft, final, disclosed FROM approvals"
        ):
            told = {f for f, _ in json.loads(disclosed)}
            words = " ".join(x for x in (question, draft, final) if x).casefold()
            if (wanted & told or any(n in words for n in needles)) and (question or draft or final):
                hit.append(rid)
        for rid in hit:
            await self._db.execute("UPDATE approvals SET question = '', draft = '', final = NULL WHERE id = ?", (rid,))
        return len(hit)


def new_id() -> str:
    """Short enough to type and to fit Telegram's 64-byte button data."""
    return secrets.token_hex(4)
