"""What connectors keep across restarts, in the state database: the bot's side of
:class:`connectors.base.PlatformState` (event ids already handled are bot/seen_events.py's).

* **routes**: small JSON documents a connector must find again (Telegram Business
  connections, Slack threads the delegate answered in);
* **undelivered**: a message the platform would not take after every retry, kept with its
  text so nothing is lost; the owner is told (``/undelivered``, ``/resend ID``) and the audit
  gets a record. Delivered replies get an audit record too, so the audit says for every reply
  whether it reached its reader.

Its tables live in the state database (bot/state.py owns the file and applies
:data:`MIGRATIONS`). :class:`ConnectorHost` is what a connector is handed: the seen events,
this state, and the outbox, through which the owner hears of an undelivered message (a note no
platform would take is kept here too).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiosqlite
import structlog

from connectors.base import Action, DeliveryReport
from epmem.audit import AuditLog, DeliveryRecord, REFUSED, UNKNOWN, UndeliveredRecord
from epmem.db import POSTGRES, Database, Migration, MigrationSet, as_database

from bot.clock import Clock, iso, utcnow
from bot.outbox import Outbox
from bot.quoting import quote
from bot.seen_events import SeenEventLog

log = structlog.get_logger(__name__)

MIGRATIONS = MigrationSet(
    "connector_state",
    (
        Migration(
            1,
            "connector routes and undelivered messages",
            """
        CREATE TABLE platform_routes (
            platform TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (platform, key)
        );
        CREATE TABLE undelivered (
            id TEXT PRIMARY KEY,
            state TEXT NOT NULL DEFAULT 'pending',
            created_at TEXT NOT NULL,
            resolved_at TEXT,
            platform TEXT NOT NULL,
            chat_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            contact TEXT,
            audit_id TEXT,
            error TEXT,
            attempts INTEGER NOT NULL,
            text TEXT NOT NULL,
            facts TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX undelivered_state ON undelivered(state, created_at)
        """,
        ),
        Migration(
            2,
            "undelivered messages that may have been delivered all the same",
            "ALTER TABLE undelivered ADD COLUMN outcome TEXT NOT NULL DEFAULT 'refused'",
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Undelivered:
    """One message kept because the platform would not take it."""

    id: str
    state: str
    created_at: datetime
    platform: str
    chat_id: str
    kind: str
    contact: str | None
    audit_id: str | None
    error: str | None
    attempts: int
    text: str
    facts: tuple[str, ...]
    #: "refused" (it did not go out) or "unknown" (a timeout after sending, or cut half way:
    #: the reader may have it already, and a /resend may show it twice).
    outcome: str = REFUSED

    @property
    def unknown(self) -> bool:
        return self.outcome == UNKNOWN

    def line(self) -> str:
        who = self.contact or self.chat_id
        maybe = "; it may have been delivered all the same" if self.unknown else ""
        return (
            f"{self.id}: {self.kind} to {who} ({self.platform}, {self.created_at:%Y-%m-%d %H:%M} UTC, "
            f"{self.error or 'failed'} after {self.attempts} attempt{'s' * (self.attempts != 1)}{maybe})\n"
            f"  {self.text}"
        )


_COLUMNS = "id, state, created_at, platform, chat_id, kind, contact, audit_id, error, attempts, text, facts, outcome"


def _row(row: Sequence[Any]) -> Undelivered:
    return Undelivered(
        row[0],
        row[1],
        datetime.fromisoformat(row[2]),
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        int(row[9]),
        row[10],
        tuple(json.loads(row[11])),
        row[12],
    )


class ConnectorState:
    """Events, routes and undelivered messages for every connector (see the module doc)."""

    def __init__(self, db: Database | aiosqlite.Connection, audit: AuditLog, *, clock: Clock = utcnow) -> None:
        self._connection = as_database(db)
        self._audit = audit
        self._clock = clock

    def _db(self) -> Database:
        return self._connection

    # ------------------------------------------------------------------ routes

    async def route(self, platform: str, key: str) -> dict[str, Any] | None:
        row = await self._db().fetchone(
            "SELECT value FROM platform_routes WHERE platform = ? AND key = ?", (platform, key)
        )
        if row is None:
            return None
        value = json.loads(row[0])
        return value if isinstance(value, dict) else None

    async def save_route(self, platform: str, key: str, value: dict[str, Any] | None) -> None:
        if value is None:
            await self._db().execute("DELETE FROM platform_routes WHERE platform = ? AND key = ?", (platform, key))
            return
        await self._db().execute(
            "INSERT INTO platform_routes(platform, key, value, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(platform, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (platform, key, json.dumps(value, sort_keys=True), iso(self._clock())),
        )

    # ------------------------------------------------------------------ deliveries

    async def record(self, report: DeliveryReport) -> Undelivered | None:
        """Audit a reply's delivery; keep an undelivered message (returned). Only once the
        outcome is in the audit is the reply no longer in flight (bot/workers.py): a worker that
        dies between the platform's answer and the record leaves its row for another to settle."""
        kept = None
        if report.delivered:
            # no contact on it: /audit CONTACT lists decisions; this only confirms one went out
            if report.audit_id is not None and report.kind == "reply":
                await self._audit.write(
                    DeliveryRecord(
                        of=report.audit_id,
                        platform=report.platform,
                        chat=report.chat_id,
                        delivered=True,
                        attempts=report.attempts,
                    )
                )
        else:
            kept = await self.keep(report)
        if report.audit_id is not None and report.kind == "reply" and self._db().dialect.name == POSTGRES:
            # workers (bot/workers.py) share a state database on a server only
            await self._db().execute("DELETE FROM replies_in_flight WHERE audit_id = ?", (report.audit_id,))
        return kept

    async def keep_owner_note(self, text: str, error: str = "no platform reaches the owner") -> None:
        """A note for the owner that no platform would take (the outbox's last resort)."""
        await self.keep(DeliveryReport("any", "owner", "owner_note", False, 0, error=error, text=text))

    async def keep(self, report: DeliveryReport) -> Undelivered:
        """Store an undelivered message (with the facts its reply disclosed, so /forget can
        erase it) and audit that it did not reach its reader."""
        reply = await self._audit.get(report.audit_id) if report.audit_id else None
        facts = tuple(str(f) for f in (reply.body.get("disclosed") or [])) if reply else ()
        kept = Undelivered(
            id=secrets.token_hex(4),
            state="pending",
            created_at=self._clock(),
            platform=report.platform,
            chat_id=report.chat_id,
            kind=report.kind,
            contact=reply.contact if reply else None,
            audit_id=report.audit_id,
            error=report.error,
            attempts=report.attempts,
            text=report.text or "",
            facts=facts,
            outcome=UNKNOWN if report.unknown else REFUSED,
        )
        await self._db().execute(
            f"INSERT INTO undelivered({_COLUMNS}) VALUES ({', '.join('?' * 13)})",
            (
                kept.id,
                kept.state,
                iso(kept.created_at),
                kept.platform,
                kept.chat_id,
                kept.kind,
                kept.contact,
                kept.audit_id,
                kept.error,
                kept.attempts,
                kept.text,
                json.dumps(list(facts)),
                kept.outcome,
            ),
        )
        # the outcome names the reply decision (``of``): the ledger counts its facts as told
        # only once a delivery follows, and as possibly told when the outcome is unknown
        await self._audit.write(
            UndeliveredRecord(
                of=report.audit_id,
                platform=report.platform,
                chat=report.chat_id,
                message_kind=report.kind,
                delivered=False,
                outcome=kept.outcome,
                attempts=report.attempts,
                error=report.error,
                undelivered=kept.id,
            ),
            contact=kept.contact,
        )
        log.warning("undelivered_kept", undelivered=kept.id, kind=report.kind, error=report.error, outcome=kept.outcome)
        return kept

    async def pending(self) -> list[Undelivered]:
        sql = f"SELECT {_COLUMNS} FROM undelivered WHERE state = 'pending' ORDER BY created_at"
        return [_row(r) for r in await self._db().fetchall(sql)]

    async def get(self, undelivered_id: str) -> Undelivered | None:
        row = await self._db().fetchone(f"SELECT {_COLUMNS} FROM undelivered WHERE id = ?", (undelivered_id,))
        return _row(row) if row else None

    async def resolve(self, undelivered_id: str, state: str) -> bool:
        """Mark a pending message ``resent`` or ``dropped``; False when it was not pending."""
        changed = await self._db().execute(
            "UPDATE undelivered SET state = ?, resolved_at = ? WHERE id = ? AND state = 'pending'",
            (state, iso(self._clock()), undelivered_id),
        )
        return changed == 1

    async def erase_disclosing(self, fact_ids: Sequence[str], words: Sequence[str] = ()) -> list[str]:
        """Delete kept messages (any state) that tell an erased fact, or hold its ``words``: a
        note for the owner names no facts but quotes them (a consultation, issue 38). /forget
        leaves no copy."""
        wanted = set(fact_ids)
        heads = _heads(words)
        rows = await self._db().fetchall("SELECT id, facts, text FROM undelivered")
        doomed = [row[0] for row in rows if wanted & set(json.loads(row[1])) or any(h in row[2] for h in heads)]
        for undelivered_id in doomed:
            await self._db().execute("DELETE FROM undelivered WHERE id = ?", (undelivered_id,))
        return doomed


#: how much of a fact's words marks a kept message as holding them: a note clips what it
#: quotes (bot/quoting.py) to far more than this.
_HEAD = 40


def _heads(words: Sequence[str]) -> set[str]:
    """What a kept message holding one of ``words`` contains: the start of the words as written
    or as a note quotes them."""
    return {form[:_HEAD] for text in words if text.strip() for form in (text.strip(), quote(text))}


def undelivered_note(kept: Undelivered) -> tuple[str, tuple[Action, ...]]:
    """What the owner is told about a message that did not go out, with a button to retry."""
    attempts = f"{kept.attempts} attempt{'s' * (kept.attempts != 1)}"
    if kept.unknown:
        text = (
            f"A {kept.kind} to {kept.contact or kept.chat_id} on {kept.platform} may or may not have been "
            f"delivered ({kept.error}, {attempts}); it was not sent again, so it cannot arrive twice. "
            f"It is kept as {kept.id}: /resend {kept.id} if it did not arrive (it may then show twice), "
            f"/discard {kept.id} if it did. The audit counts it as possibly read."
        )
    else:
        text = (
            f"A {kept.kind} to {kept.contact or kept.chat_id} on {kept.platform} could not be delivered "
            f"({kept.error}, {attempts}). It is kept as {kept.id}: /resend {kept.id} to try again, "
            f"/undelivered to see it."
        )
    return text, (Action("Resend", f"/resend {kept.id}"),)


class ConnectorHost:
    """The :class:`connectors.base.PlatformState` a connector is given: the state database for
    events and routes, and for a delivery that failed, the record plus a note to the owner."""

    def __init__(self, seen: SeenEventLog, state: ConnectorState, outbox: Outbox) -> None:
        self._seen = seen
        self._state = state
        self._outbox = outbox

    async def first_time(self, platform: str, event_id: str) -> bool:
        return await self._seen.first_time(platform, event_id)

    async def route(self, platform: str, key: str) -> dict[str, Any] | None:
        return await self._state.route(platform, key)

    async def save_route(self, platform: str, key: str, value: dict[str, Any] | None) -> None:
        await self._state.save_route(platform, key, value)

    async def report(self, report: DeliveryReport) -> None:
        kept = await self._state.record(report)
        if kept is None or kept.kind == "owner_note":
            return  # a failed note to the owner is kept; telling the owner about it would loop
        try:
            await self._outbox.tell_owner(*undelivered_note(kept))
        except Exception as exc:  # the note is lost, the message is not: it is in the table
            log.warning("undelivered_note_failed", error=type(exc).__name__)
