"""Messages the bot decides on outside a reply: a held reply sent after approval, notes to the owner.

A reply goes back through the connector that delivered the question. Everything else needs a
route to a platform that may not be the one in hand: the owner approves on Telegram a reply held
on Slack; the digest goes to whichever platform reaches the owner. The outbox is that routing
table. It is built empty with the rest of the bot (bot/runtime.py) and handed to the parts that
send; connectors join it when ``epmem run`` starts them and leave when they stop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from connectors.base import Action

log = structlog.get_logger(__name__)

#: a connector's ``send(chat_id, text, actions)``.
Sender = Callable[[str, str, tuple[Action, ...]], Awaitable[None]]
#: a connector's ``readers(chat_id, sender)``: everyone who would read a message sent to that
#: group chat now, ``sender`` first, failing closed like a reply's audience (an unknown member
#: is a stranger placeholder); the connector's own ``Inbound.audience``, asked again.
Readers = Callable[[str, str], Awaitable[tuple[str, ...]]]


@dataclass(frozen=True, slots=True)
class _Route:
    send: Sender
    #: the owner's chat on this platform; None when the policy names no owner identity there.
    owner_chat: str | None
    #: who reads a group chat now; None when the platform cannot say (no follow-up in a group).
    readers: Readers | None = None


class Outbox:
    def __init__(self, keep: Callable[[str], Awaitable[None]] | None = None) -> None:
        """``keep(text)`` stores a note for the owner that no platform took (nothing is dropped)."""
        self._routes: dict[str, _Route] = {}
        self._keep = keep

    def attach(
        self, platform: str, send: Sender, owner_chat: str | None = None, readers: Readers | None = None
    ) -> None:
        """A connector is running: messages for ``platform`` go through ``send``; ``readers``
        tells who reads one of its group chats now (a follow-up there is decided for them)."""
        self._routes[platform] = _Route(send, owner_chat, readers)

    def detach(self, platform: str) -> None:
        self._routes.pop(platform, None)

    @property
    def platforms(self) -> list[str]:
        return list(self._routes)

    def reaches(self, platform: str) -> bool:
        return platform in self._routes

    def reaches_owner(self, platform: str) -> bool:
        route = self._routes.get(platform)
        return route is not None and route.owner_chat is not None

    async def send(self, platform: str, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        """Deliver to a chat; raises ``LookupError`` when no connector for ``platform`` runs
        here, and whatever the connector raises when the platform says no."""
        route = self._routes.get(platform)
        if route is None:
            raise LookupError(f"no connector for {platform}")
        await route.send(chat_id, text, actions)

    def knows_readers(self, platform: str) -> bool:
        """Whether the connector for ``platform`` can say who reads one of its group chats."""
        route = self._routes.get(platform)
        return route is not None and route.readers is not None

    async def readers(self, platform: str, chat_id: str, sender: str) -> tuple[str, ...] | None:
        """Everyone who would read a message sent to this group chat now (``sender`` first);
        None when no connector for ``platform`` runs here or it cannot say."""
        route = self._routes.get(platform)
        if route is None or route.readers is None:
            return None
        return await route.readers(chat_id, sender)

    async def tell_owner(self, text: str, actions: tuple[Action, ...] = ()) -> bool:
        """Tell the owner on the first platform that reaches them; False (logged, and the note
        kept for ``/undelivered``) when none did."""
        for platform, route in self._routes.items():
            if route.owner_chat is None:
                continue
            try:
                await route.send(route.owner_chat, text, actions)
                return True
            except Exception as exc:
                log.warning("owner_note_failed", platform=platform, error=type(exc).__name__)
        log.warning("owner_note_undelivered", reason="no platform reaches the owner")
        if self._keep is not None:
            await self._keep(text)
        return False
