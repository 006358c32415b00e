"""One Telegram bot for several owners: polled once, each update handed to its owner's connector.

Telegram lets one client at a time poll a bot. In a deployment where every owner links their
own account to one shared bot (a Business connection each, made in Telegram's settings), one
front long-polls and hands each update to the connector of the owner it is for; each owner's
:class:`~connectors.telegram.app.TelegramConnector` runs ``fed`` (it polls nothing itself) and
answers, sends and keeps its state as it always does:

* a Business connection, and every Business message through it (new, edited or deleted), goes
  to the owner who made the connection (Telegram names them; a connection first seen in a
  message is asked of Telegram);
* a message or a button press in a private chat with the bot goes to the owner whose account
  it comes from: their commands, their notes' buttons;
* anything else (someone else writing to the bot directly, a group) goes to nobody: whose
  delegate would it be asking? It is logged with its kind and never answered (fail closed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
from telegram import Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, ContextTypes, TypeHandler

from connectors.telegram.client import bot_application
from connectors.telegram.config import PLATFORM, TelegramConfig, identity

if TYPE_CHECKING:
    from connectors.telegram.app import TelegramConnector

log = structlog.get_logger(__name__)


class TelegramFront:
    """The shared bot's one poller (see the module doc)."""

    platform = PLATFORM

    def __init__(self, config: TelegramConfig) -> None:
        self._config = config
        self._app: Application[Any, Any, Any, Any, Any, Any] = bot_application(config)
        self._app.add_handler(TypeHandler(Update, self._route))
        self._owners: dict[int, TelegramConnector] = {}
        self._connections: dict[str, int] = {}

    def attach(self, owner_user_id: int, connector: TelegramConnector) -> None:
        """``connector`` answers for the owner whose Telegram account is ``owner_user_id``."""
        if owner_user_id in self._owners:
            raise ValueError(f"two owners of one shared bot are {identity(owner_user_id)}")
        self._owners[owner_user_id] = connector

    async def start(self) -> None:
        """Poll, once the owners' connectors are attached and started (an update is handed on at once)."""
        from connectors.telegram.app import ALLOWED_UPDATES

        await self._app.initialize()
        await self._app.start()
        updater = self._app.updater
        assert updater is not None  # ApplicationBuilder always makes one
        await updater.start_polling(
            poll_interval=self._config.poll_interval,
            timeout=int(self._config.poll_timeout),
            allowed_updates=[*ALLOWED_UPDATES, Update.DELETED_BUSINESS_MESSAGES],
            error_callback=lambda error: log.warning("telegram.polling_error", error=type(error).__name__),
        )
        log.info("telegram.front_started", owners=len(self._owners))

    async def stop(self) -> None:
        updater = self._app.updater
        if updater is not None and updater.running:
            await updater.stop()
        if self._app.running:
            await self._app.stop()
        await self._app.shutdown()

    async def _route(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        owner = await self.owner_of(update)
        connector = self._owners.get(owner) if owner is not None else None
        if connector is None:
            kind = next((k for k in ("message", "callback_query", "business_message") if getattr(update, k)), "other")
            log.info("telegram.unrouted", update_id=update.update_id, kind=kind)
            return
        await connector.feed(update)

    async def owner_of(self, update: Update) -> int | None:
        """The Telegram account of the owner ``update`` is for, or None (nobody's)."""
        connection = update.business_connection
        if connection is not None:
            self._connections[connection.id] = connection.user.id
            return connection.user.id
        business = update.business_message or update.edited_business_message or update.deleted_business_messages
        if business is not None:
            return await self._connection_user(business.business_connection_id)
        chat, user = update.effective_chat, update.effective_user
        if chat is not None and chat.type == ChatType.PRIVATE and user is not None:
            return user.id
        return None

    async def _connection_user(self, connection_id: str | None) -> int | None:
        if not connection_id:
            return None
        known = self._connections.get(connection_id)
        if known is None:
            try:
                fetched = await self._app.bot.get_business_connection(connection_id)
            except TelegramError as exc:
                log.warning("telegram.business_connection_unknown", error=type(exc).__name__)
                return None
            known = self._connections[connection_id] = fetched.user.id
        return known
