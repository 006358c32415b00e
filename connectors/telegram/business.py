"""Telegram Business connections: the owner's account lent to the bot, remembered across restarts.

A Business message arrives with a connection id; whether it may be answered depends on who
made the connection (only the owner's counts), whether it is enabled and whether it may reply.
Those facts come once, in a ``business_connection`` update, so they are kept in the host's
state: after a restart an approved reply still knows the connection is the owner's and goes
out through it. A connection this process never heard of is asked of Telegram and kept too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from telegram import BusinessConnection as PtbConnection
from telegram.error import TelegramError

from connectors.base import PlatformState
from connectors.telegram.config import PLATFORM, identity

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Connection:
    """What Telegram told us about one connection: whose account, and may we reply."""

    user_id: int
    enabled: bool
    can_reply: bool

    @classmethod
    def of(cls, connection: PtbConnection) -> Connection:
        rights = connection.rights
        return cls(connection.user.id, connection.is_enabled, rights is None or bool(rights.can_reply))

    def usable_by(self, owner_user_id: int | None) -> bool:
        """The owner's own, enabled connection (replying rights are checked separately)."""
        return self.enabled and owner_user_id is not None and self.user_id == owner_user_id


def _key(connection_id: str) -> str:
    return f"business:{connection_id}"


class BusinessConnections:
    """Connection records: memory first, then the host's state, then Telegram."""

    def __init__(self, state: PlatformState, fetch: Callable[[str], Awaitable[PtbConnection]]) -> None:
        self._state = state
        self._fetch = fetch
        self._known: dict[str, Connection] = {}

    async def remember(self, connection: PtbConnection) -> Connection:
        """A ``business_connection`` update: keep what it says (enabled or not)."""
        record = Connection.of(connection)
        await self._store(connection.id, record)
        log.info("telegram.business_connection", connected_user=identity(record.user_id), enabled=record.enabled)
        return record

    async def get(self, connection_id: str) -> Connection | None:
        """The connection behind an id; None when unknowable (then nothing is answered through
        it: without the owner's id we cannot tell the owner's own messages from a customer's)."""
        known = self._known.get(connection_id)
        if known is not None:
            return known
        stored = await self._state.route(PLATFORM, _key(connection_id))
        if stored is not None:
            try:
                known = Connection(int(stored["user_id"]), bool(stored["enabled"]), bool(stored["can_reply"]))
            except (KeyError, TypeError, ValueError):
                log.warning("telegram.business_connection_record_unreadable")
            else:
                self._known[connection_id] = known
                return known
        try:
            fetched = await self._fetch(connection_id)
        except TelegramError as exc:
            log.warning("telegram.business_connection_unknown", error=type(exc).__name__)
            return None
        record = Connection.of(fetched)
        await self._store(connection_id, record)
        return record

    async def _store(self, connection_id: str, record: Connection) -> None:
        self._known[connection_id] = record
        await self._state.save_route(
            PLATFORM,
            _key(connection_id),
            {"user_id": record.user_id, "enabled": record.enabled, "can_reply": record.can_reply},
        )
