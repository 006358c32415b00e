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


@dataclass(frozen=True, slots=True)
class _Route:
    send: Sender
    #: the owner's chat on this platform; None when the policy names no owner identity there.
    owner_chat: str | None


class Outbox:
    def __init__(self, keep: Callable[[str], Awaitable[None]] | None = None) -> None:
        """``keep(text)`` stores a note for the owner that no platform took (nothing is dropped)."""
        self._routes: dict[str, _Route] = {}
        self._keep = keep

    def attach(self, platform: str, send: Sender, owner_chat: str | None = None) -> None:
        """A connector is running: messages for ``platform`` go through ``send``."""
        self._routes[platform] = _Route(send, owner_chat)

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
