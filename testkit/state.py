"""The connectors' state (events, routes, undelivered messages) on real SQLite files.

Connectors get their storage from the bot through :class:`connectors.base.PlatformState`; the
tests use the bot's own implementation (:class:`bot.connector_state.ConnectorHost` over a
:class:`~bot.connector_state.ConnectorState`) on a fresh state database and audit log in a temp
folder, never a stand-in. The owner's notes go through a real :class:`~bot.outbox.Outbox` to an
inbox the test reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiosqlite

from bot.connector_state import ConnectorHost, ConnectorState
from bot.outbox import Outbox
from bot.seen_events import SeenEventLog
from bot.state import StateDB
from connectors.base import Action
from epmem.audit.log import AuditLog


@dataclass
class OpenState:
    """A state database, its audit log and the notes the owner would have been sent."""

    db: aiosqlite.Connection
    audit: AuditLog
    #: what a connector is handed
    state: ConnectorHost
    #: the table of undelivered messages, routes and event ids behind it
    deliveries: ConnectorState
    owner_notes: list[tuple[str, tuple[Action, ...]]] = field(default_factory=list)


@asynccontextmanager
async def connector_state(folder: Path) -> AsyncIterator[OpenState]:
    """A :class:`ConnectorState` on ``folder``/state.sqlite (reopening the folder keeps it)."""
    state_db = await StateDB(folder / "state.sqlite").open()
    db = state_db.connection
    audit = await AuditLog(folder / "audit.sqlite").open()
    notes: list[tuple[str, tuple[Action, ...]]] = []

    async def owner_inbox(chat_id: str, text: str, actions: tuple[Action, ...]) -> None:
        notes.append((text, actions))

    try:
        deliveries = ConnectorState(db, audit)
        outbox = Outbox(keep=deliveries.keep_owner_note)
        outbox.attach("inbox", owner_inbox, owner_chat="owner")
        yield OpenState(db, audit, ConnectorHost(SeenEventLog(db), deliveries, outbox), deliveries, notes)
    finally:
        await audit.close()
        await state_db.close()
