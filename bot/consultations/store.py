"""Consultations: the delegate asks the owner at the moment someone's question needs a closed fact.

Nothing that came from a conversation is told before the owner has decided who may know it
(docs/DESIGN.md sec. 6.5). When a contact asks something that closed facts would answer, the
contact gets exactly the reply they would get without those facts, and the owner is asked about
the facts of one event: who asked, the question, the facts' words, and one-tap answers. The
answer applies to the whole event and to later askers; if it lets the asker know, the delegate
follows up in the same chat (bot/consultations/flow.py, decided again at send time).

This module is the table: one row per (event, asker), so that an answer to the event reaches
every asker who is still waiting. Only the first row of an event notifies the owner; a later
asker joins it. Rows survive a restart (SQLite, like held replies) and expire unanswered.
Bounded: a few open consultations per asker, none for strangers unless the owner turns that on.
Rows are read and written by column name (bot/tables.py, shared with bot/approvals.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

import aiosqlite

from connectors.base import ChatKind
from epmem.sqlite import DatabaseError, Migration, MigrationSet

from bot.approvals import new_id
from bot.clock import Clock, iso, utcnow
from bot.tables import Row, Table

MIGRATIONS = MigrationSet(
    "consultations",
    (
        Migration(
            1,
            "consultations: the owner asked about closed facts when someone's question needed them",
            """
        CREATE TABLE consultations (
            id TEXT PRIMARY KEY,
            state TEXT NOT NULL DEFAULT 'open',
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            decided_at TEXT,
            event_id TEXT NOT NULL,
            facts TEXT NOT NULL,
            platform TEXT NOT NULL,
            chat_id TEXT NOT NULL,
            chat_kind TEXT NOT NULL,
            sender TEXT NOT NULL,
            contact TEXT NOT NULL,
            contact_id TEXT,
            audience TEXT NOT NULL,
            question TEXT NOT NULL,
            audit_id TEXT NOT NULL,
            lead TEXT,
            answer TEXT,
            followup_audit TEXT,
            delegation TEXT
        );
        CREATE INDEX consultations_open ON consultations(state, event_id);
        CREATE INDEX consultations_sender ON consultations(state, sender)
        """,
        ),
        Migration(
            2,
            "consultations: the delegation column dropped (a reply sent as the owner never consults)",
            "ALTER TABLE consultations DROP COLUMN delegation",
        ),
        Migration(
            3,
            "consultations: the batch column, the owner's message that asked (one message may ask about "
            "several events of one question; a row from before is a message of its own)",
            """
        ALTER TABLE consultations ADD COLUMN batch TEXT;
        UPDATE consultations SET batch = id WHERE batch IS NULL;
        CREATE INDEX consultations_batch ON consultations(batch)
        """,
        ),
    ),
)

#: where a consultation is: waiting for the owner, answered, expired unanswered, or withdrawn
#: (/forget erased a fact it asked about).
State = Literal["open", "answered", "expired", "withdrawn"]
STATES: tuple[State, ...] = get_args(State)


@dataclass(frozen=True, slots=True)
class Consultation:
    """One asker waiting on the owner's word about one event."""

    id: str
    state: State
    created_at: datetime
    expires_at: datetime
    event_id: str
    #: the closed facts of the event that would answer (best first) when it was opened.
    facts: tuple[str, ...]
    platform: str
    chat_id: str
    chat_kind: ChatKind
    sender: str
    #: the asker as the audit names them; ``contact_id`` the policy's id (None: a stranger).
    contact: str
    contact_id: str | None
    #: every identity that read the first reply (the follow-up is judged for all of them).
    audience: tuple[str, ...]
    question: str
    audit_id: str
    #: the consultation of the same event that asked the owner (None: this one did).
    lead: str | None = None
    answer: str | None = None
    followup_audit: str | None = None
    decided_at: datetime | None = None
    #: the row's number in this data folder (1, 2, ...): what the owner types, ``/consult 3 tell``.
    number: int = 0
    #: the owner's message this consultation was asked in (the id of its first consultation):
    #: one message may ask about several events of one question, each its own row with its own
    #: buttons, and counts as one consultation for the bounds and ``per_reply``. Empty: its own.
    batch: str = ""

    @property
    def asked_owner(self) -> bool:
        return self.lead is None


TABLE = Table(
    "consultations",
    (
        "id",
        "state",
        "created_at",
        "expires_at",
        "decided_at",
        "event_id",
        "facts",
        "platform",
        "chat_id",
        "chat_kind",
        "sender",
        "contact",
        "contact_id",
        "audience",
        "question",
        "audit_id",
        "lead",
        "answer",
        "followup_audit",
        "batch",
    ),
)
#: what every read selects besides the columns: the row's number (``Consultation.number``).
NUMBER = "rowid AS number"
#: the columns stored as text that a field reads decoded (times, JSON lists, the number).
_DECODED = ("created_at", "expires_at", "decided_at", "facts", "audience", "batch")


def _row(row: Row) -> Consultation:
    if row["state"] not in STATES or row["chat_kind"] not in get_args(ChatKind):
        raise DatabaseError(f"consultations row {row['id']}: state {row['state']!r}, chat kind {row['chat_kind']!r}")
    return Consultation(
        **{k: row[k] for k in TABLE.columns if k not in _DECODED},
        created_at=datetime.fromisoformat(row["created_at"]),
        expires_at=datetime.fromisoformat(row["expires_at"]),
        decided_at=datetime.fromisoformat(row["decided_at"]) if row["decided_at"] else None,
        facts=tuple(json.loads(row["facts"])),
        audience=tuple(json.loads(row["audience"])),
        number=int(row["number"]) if row.get("number") is not None else 0,
        batch=row["batch"] or row["id"],
    )


@dataclass(frozen=True, slots=True)
class ConsultConfig:
    #: how long a consultation waits for the owner (then the asker has had their reply, and
    #: the owner's later word still applies to later askers; only the follow-up is lost).
    ttl: timedelta = timedelta(hours=24)
    #: open consultations per contact, all of its identities together (strangers: all of them
    #: together, ``strangers_max_open``): a person asking about everything does not flood the owner.
    max_open_per_asker: int = 3
    #: consultations that asked the owner in the last 24 hours, per contact (answered, open or
    #: expired alike), per the strangers together, and for the owner in all (bot/consultations/bounds.py).
    per_day: int = 5
    strangers_max_open: int = 2
    strangers_per_day: int = 3
    owner_per_day: int = 20
    #: an event whose consultation expired unanswered is not asked about again for this long.
    reask_after: timedelta = timedelta(days=7)
    #: strangers' questions consult the owner only when the owner turns this on.
    strangers: bool = False
    #: a question asked in a group chat consults the owner (where the platform can say who is
    #: in the chat when the follow-up is sent); off: only direct chats do.
    groups: bool = False
    #: opt-in (0: off): open a fact without asking when the owner's last N answers about similar
    #: facts all chose the same audience (docs/DESIGN.md sec. 6.7).
    learn_after: int = 0
    #: consultations one reply may lead to, asked one after another: once the owner has
    #: answered about the event likeliest to answer, the next likeliest that is still closed
    #: (docs/DESIGN.md sec. 6.7). 1: only the first. Counted in the owner's messages: one
    #: message that asks about several events is one.
    per_reply: int = 1
    #: events one message to the owner may ask about at once, each with its own buttons: the
    #: likeliest to answer the question, and further ones the cross-encoder is sure answer it.
    #: 1: one event per message.
    per_message: int = 1


#: a new consultation, in one statement (one transaction): inserted only when the asker does not
#: wait on the event already and has fewer than the bound open (messages: the rows of one batch
#: are one, and a row joining its own batch adds none); its lead is the open consultation of the
#: event that asked the owner, if any. Two opens racing for one key make one row.
_COLUMNS = [c for c in TABLE.columns if c not in ("decided_at", "answer", "followup_audit", "batch")]
_OPEN = f"""
INSERT INTO consultations({", ".join([*_COLUMNS, "batch"])})
SELECT :id, 'open', :created_at, :expires_at, :event_id, :facts, :platform, :chat_id, :chat_kind, :sender,
    :contact, :contact_id, :audience, :question, :audit_id,
    (SELECT id FROM consultations WHERE state = 'open' AND expires_at > :now AND event_id = :event_id
        AND lead IS NULL ORDER BY created_at, id LIMIT 1),
    :batch
WHERE NOT EXISTS (SELECT 1 FROM consultations WHERE state = 'open' AND expires_at > :now
        AND sender = :sender AND event_id = :event_id)
    AND (SELECT COUNT(DISTINCT batch) FROM consultations WHERE state = 'open' AND expires_at > :now
        AND sender = :sender AND batch != :batch) < :most
RETURNING lead
"""


class ConsultationStore:
    """The consultation table, in the state database (bot/state.py owns the connection)."""

    def __init__(self, db: aiosqlite.Connection, config: ConsultConfig | None = None, clock: Clock = utcnow) -> None:
        self._db = db
        self.config = config or ConsultConfig()
        self.clock = clock

    async def open(
        self,
        *,
        event_id: str,
        facts: Sequence[str],
        platform: str,
        chat_id: str,
        chat_kind: ChatKind,
        sender: str,
        contact: str,
        contact_id: str | None,
        audience: Sequence[str],
        question: str,
        audit_id: str,
        batch: str | None = None,
    ) -> Consultation | None:
        """A new consultation, or None when the bounds say no (too many open for this asker,
        or this asker already waits on this event). ``batch``: the owner's message it is asked
        in, with the consultations opened before it for the same message (None: a message of
        its own, named by this consultation's id). When the event already has an open
        consultation, the new one joins it (``lead`` set): the owner is not asked twice. The
        check and the insert are one statement, so one transaction (an explicit BEGIN on the
        state connection, shared by every part, would take in whatever another task runs on it
        between this one's awaits)."""
        now = self.clock()
        c = Consultation(
            id=new_id(),
            state="open",
            created_at=now,
            expires_at=now + self.config.ttl,
            event_id=event_id,
            facts=tuple(facts),
            platform=platform,
            chat_id=chat_id,
            chat_kind=chat_kind,
            sender=sender,
            contact=contact,
            contact_id=contact_id,
            audience=tuple(audience),
            question=question,
            audit_id=audit_id,
        )
        c = replace(c, batch=batch or c.id)
        args = {
            "id": c.id,
            "created_at": iso(c.created_at),
            "expires_at": iso(c.expires_at),
            "event_id": event_id,
            "facts": json.dumps(list(c.facts)),
            "platform": platform,
            "chat_id": chat_id,
            "chat_kind": chat_kind,
            "sender": sender,
            "contact": contact,
            "contact_id": contact_id,
            "audience": json.dumps(list(c.audience)),
            "question": question,
            "audit_id": audit_id,
            "now": iso(now),
            "most": self.config.max_open_per_asker,
            "batch": c.batch,
        }
        async with self._db.execute(_OPEN, args) as cur:
            row = await cur.fetchone()
        if row is None:
            return None  # the bounds across identities are bot/consultations/bounds.py's
        return replace(c, lead=row[0])

    async def _open_rows(self, where: str, args: tuple[Any, ...], now: datetime) -> list[Consultation]:
        sql = TABLE.select(f"state = 'open' AND expires_at > ? AND {where}", "ORDER BY created_at, id", NUMBER)
        return [_row(r) for r in await TABLE.rows(self._db, sql, (iso(now), *args))]

    async def open_count(self, contact_id: str | None, besides: str | None = None) -> int:
        """Open consultations of a contact (all its identities), or of all strangers (None), in
        messages: the rows of one batch count once, and those of batch ``besides`` not at all
        (the message being put together)."""
        who = "contact_id IS NULL" if contact_id is None else "contact_id = ?"
        rows = await self._open_rows(who, () if contact_id is None else (contact_id,), self.clock())
        return len({c.batch for c in rows if c.batch != besides})

    async def asked_since(
        self, since: datetime, contact_id: str | None = None, *, everyone: bool = False, besides: str | None = None
    ) -> int:
        """The owner's messages that consulted since ``since``, in any state (one per batch):
        a contact's, all strangers' (None), or ``everyone``'s; not batch ``besides``."""
        where, args = "lead IS NULL AND created_at >= ? AND batch IS NOT ?", [iso(since), besides]
        if not everyone:
            where += " AND contact_id IS NULL" if contact_id is None else " AND contact_id = ?"
            args += [] if contact_id is None else [contact_id]
        return await self._count(where, args)

    async def _count(self, where: str, args: Sequence[Any]) -> int:
        """How many batches (the owner's messages) the rows ``where`` selects fall in."""
        sql = f"SELECT COUNT(DISTINCT batch) FROM consultations WHERE {where}"
        async with self._db.execute(sql, tuple(args)) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def waits(self, sender: str, event_id: str) -> bool:
        """This asker already waits on this event (a repeated question opens nothing new)."""
        return bool(await self._open_rows("sender = ? AND event_id = ?", (sender, event_id), self.clock()))

    async def has_lead(self, event_id: str) -> bool:
        """An open consultation of this event asked the owner (a new asker joins it)."""
        return any(c.asked_owner for c in await self._open_rows("event_id = ?", (event_id,), self.clock()))

    async def expired_since(self, event_id: str, since: datetime) -> bool:
        """A consultation of this event expired unanswered since ``since``."""
        async with self._db.execute(
            "SELECT 1 FROM consultations WHERE event_id = ? AND lead IS NULL AND ((state = 'expired' AND "
            "decided_at >= ?) OR (state = 'open' AND expires_at <= ? AND expires_at >= ?)) LIMIT 1",
            (event_id, iso(since), iso(self.clock()), iso(since)),
        ) as cur:
            return await cur.fetchone() is not None

    async def get(self, consultation_id: str) -> Consultation | None:
        row = await TABLE.one(self._db, TABLE.select("id = ?", extra=NUMBER), (consultation_id,))
        return _row(row) if row else None

    async def pending(self) -> list[Consultation]:
        """The open consultations that asked the owner (the digest and ``/consults`` list them)."""
        return [c for c in await self._open_rows("1 = 1", (), self.clock()) if c.asked_owner]

    async def find(self, ref: str) -> list[Consultation]:
        """The consultation numbered ``ref`` (what /consults shows), else every one whose id is
        ``ref`` or starts with it (at least 4 characters); the caller refuses more than one."""
        ref = ref.strip().lower()
        if ref.isdigit():  # the number /consults shows
            numbered = await self._select("rowid = ?", (int(ref),))
            if numbered or len(ref) < 4:
                return numbered
        if len(ref) < 4 or not all(ch in "0123456789abcdef" for ch in ref):
            exact = await self.get(ref)
            return [exact] if exact is not None else []
        return await self._select("substr(id, 1, ?) = ?", (len(ref), ref), "ORDER BY created_at, id")

    async def _select(self, where: str, args: Sequence[Any], tail: str = "") -> list[Consultation]:
        return [_row(r) for r in await TABLE.rows(self._db, TABLE.select(where, tail, NUMBER), args)]

    async def answered_for(self, platform: str, sender: str) -> list[Consultation]:
        """The answered consultations this sender asked on ``platform`` that were followed up."""
        return await self._select(
            "state = 'answered' AND platform = ? AND sender = ? AND followup_audit IS NOT NULL",
            (platform, sender),
            "ORDER BY decided_at, id",
        )

    async def for_reply(self, audit_id: str) -> int:
        """How many of the owner's messages (batches) the reply with this audit id led to, in
        any state: a message that asked about several events is one."""
        return await self._count("audit_id = ?", (audit_id,))

    async def in_batch(self, batch: str) -> list[Consultation]:
        """Every consultation asked in one message to the owner, in any state, first first."""
        return await self._select("batch = ?", (batch,), "ORDER BY created_at, rowid")

    async def waiting_on(self, event_ids: Sequence[str]) -> list[Consultation]:
        """Every open consultation about these events (the askers an answer follows up)."""
        wanted = set(event_ids)
        return [c for c in await self._open_rows("1 = 1", (), self.clock()) if c.event_id in wanted]

    async def settle(self, consultation_id: str, answer: str, now: datetime | None = None) -> bool:
        """Mark one open consultation answered (atomically: a double tap settles it once)."""
        now = now or self.clock()
        cur = await self._db.execute(
            "UPDATE consultations SET state = 'answered', decided_at = ?, answer = ? WHERE id = ? AND state = 'open'",
            (iso(now), answer, consultation_id),
        )
        return cur.rowcount == 1

    async def followed_up(self, consultation_id: str, audit_id: str) -> None:
        await self._db.execute("UPDATE consultations SET followup_audit = ? WHERE id = ?", (audit_id, consultation_id))

    async def expire_due(self, now: datetime) -> list[Consultation]:
        """Every open consultation whose time is up, marked expired (each returned once)."""
        due = await self._select("state = 'open' AND expires_at <= ?", (iso(now),))
        expired = []
        for c in due:
            cur = await self._db.execute(
                "UPDATE consultations SET state = 'expired', decided_at = ? WHERE id = ? AND state = 'open'",
                (iso(now), c.id),
            )
            if cur.rowcount == 1:
                expired.append(c)
        return expired

    async def withdraw_naming(self, fact_ids: Sequence[str]) -> list[str]:
        """/forget: open consultations about an erased fact are withdrawn, their question blanked."""
        wanted = set(fact_ids)
        hit = []
        async with self._db.execute("SELECT id, facts FROM consultations") as cur:
            async for cid, facts in cur:
                if wanted & set(json.loads(facts)):
                    hit.append(cid)
        for cid in hit:
            await self._db.execute(
                "UPDATE consultations SET state = CASE state WHEN 'open' THEN 'withdrawn' ELSE state END, "
                "question = '' WHERE id = ?",
                (cid,),
            )
        return hit
