"""Telegram adapter: python-telegram-bot updates in, :class:`Inbound`; :class:`Outbound` back out.

The connector only translates. Every decision about *what* to say belongs to the agent's
handler; what the connector owns is telling the agent truthfully *who* will read the reply
(:mod:`connectors.telegram.audience`, :mod:`connectors.telegram.mentions` for whether a group
message is addressed to the bot) and getting the answer there
(:mod:`connectors.telegram.delivery`).

Transport: PTB's ``Updater`` long-polls (or serves a webhook); the application's handlers call
into this class. PTB's one network seam is its request object, built here with
``trust_env=False`` so proxy variables in the environment never redirect the bot's traffic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlparse

import structlog
from telegram import CallbackQuery, Message, Update, User
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    BusinessConnectionHandler,
    CallbackQueryHandler,
    ChatMemberHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from connectors.base import Action, ChatKind, Delegation, Handler, Inbound, Outbound, PlatformState, request_context
from connectors.courier import DeliveryFailed
from connectors.telegram.audience import GroupRoster
from connectors.telegram.business import BusinessConnections
from connectors.telegram.buttons import Buttons
from connectors.telegram.client import bot_application
from connectors.telegram.config import PLATFORM, TelegramConfig, chat_key, identity, parse_chat_key
from connectors.telegram.delivery import TelegramTarget, TelegramDelivery
from connectors.telegram.mentions import addressed_to, strip_self_references
from connectors.telegram.menu import show_owner_commands
from connectors.telegram.text import attachment_kind

log = structlog.get_logger(__name__)

#: the updates the connector has handlers for; ``chat_member`` must be asked for explicitly.
ALLOWED_UPDATES: tuple[str, ...] = (
    Update.MESSAGE,
    Update.EDITED_MESSAGE,
    Update.CALLBACK_QUERY,
    Update.BUSINESS_CONNECTION,
    Update.BUSINESS_MESSAGE,
    Update.EDITED_BUSINESS_MESSAGE,
    Update.CHAT_MEMBER,
    Update.MY_CHAT_MEMBER,
)

_Callback = Callable[[Update, ContextTypes.DEFAULT_TYPE], Coroutine[Any, Any, None]]


class RedactToken(logging.Filter):
    """httpx logs every request URL at INFO, and Bot API URLs contain the token."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._token = token

    def filter(self, record: logging.LogRecord) -> bool:
        if self._token:
            message = record.getMessage()
            if self._token in message:
                record.msg = message.replace(self._token, "<token>")
                record.args = ()
        return True


class TelegramConnector:
    """Runs a PTB application and translates between Telegram and the agent's handler.

    Kept in the host's state (``state``): Business connections, so approved replies still go
    out as the owner after a restart. Kept in memory (rebuilt from traffic): group members
    seen, administrator lists, and the short keys standing in for long button commands.
    """

    platform = PLATFORM

    def __init__(self, config: TelegramConfig, handler: Handler, *, state: PlatformState) -> None:
        self._config = config
        self._handler = handler
        self._app: Application[Any, Any, Any, Any, Any, Any] = bot_application(config)
        self._register_handlers()
        self.roster = GroupRoster(config.timer.now)
        self.business = BusinessConnections(state, lambda cid: self._app.bot.get_business_connection(cid))
        self.buttons = Buttons()
        self.delivery = TelegramDelivery(lambda: self._app.bot, config, state, self.buttons)
        self._lock = asyncio.Lock()
        self._initialized = False
        self._redactor = RedactToken(config.token)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return bool(self._app.running)

    async def start(self) -> None:
        """Initialise (getMe), start the application, then poll or serve the webhook.

        Returns once updates are flowing. Calling it while running does nothing; if a step
        fails, whatever was started is stopped again before the error propagates.
        """
        async with self._lock:
            if self._app.running:
                return
            logging.getLogger("httpx").addFilter(self._redactor)
            try:
                await self._app.initialize()
                self._initialized = True
                await self._app.start()
                await show_owner_commands(self._app.bot, self._config.owner_user_id, self._config.owner_commands)
                await self._start_updates()
            except BaseException:
                await self._stop_locked()
                raise
            mode = "fed" if self._config.fed else "webhook" if self._config.webhook_url else "polling"
            log.info("telegram.started", bot_id=self._app.bot.id, mode=mode)

    async def feed(self, update: Update) -> None:
        """An update a :class:`~connectors.telegram.front.TelegramFront` polled for this owner."""
        await self._app.process_update(Update.de_json(update.to_dict(), self._app.bot))

    async def _start_updates(self) -> None:
        if self._config.fed:  # one bot for several owners: the front polls (connectors/telegram/front.py)
            return
        updater = self._app.updater
        if updater is None:  # pragma: no cover - ApplicationBuilder always makes one
            raise RuntimeError("PTB application has no updater")
        config = self._config
        if config.webhook_url:
            if not config.secret_token:
                log.warning("telegram.webhook_without_secret_token")
            await updater.start_webhook(
                listen=config.webhook_listen,
                port=config.webhook_port,
                url_path=urlparse(config.webhook_url).path.lstrip("/"),
                webhook_url=config.webhook_url,
                allowed_updates=list(ALLOWED_UPDATES),
                secret_token=config.secret_token,
            )
        else:
            await updater.start_polling(
                poll_interval=config.poll_interval,
                timeout=int(config.poll_timeout),
                allowed_updates=list(ALLOWED_UPDATES),
                error_callback=self._on_polling_error,
            )

    async def stop(self) -> None:
        """Stop the updater, then the application, then release its HTTP clients.

        Safe to call twice, or without a successful start.
        """
        async with self._lock:
            await self._stop_locked()

    async def _stop_locked(self) -> None:
        updater = self._app.updater
        try:
            if updater is not None and updater.running:
                await updater.stop()
        finally:
            try:
                if self._app.running:
                    await self._app.stop()
            finally:
                if self._initialized:
                    self._initialized = False
                    await self._app.shutdown()
                logging.getLogger("httpx").removeFilter(self._redactor)

    @staticmethod
    def _on_polling_error(error: TelegramError) -> None:
        """PTB retries polling by itself; log the kind only (messages may echo the URL)."""
        log.warning("telegram.polling_error", error=type(error).__name__)

    # -- sending ---------------------------------------------------------------------------------

    async def readers(self, chat_id: str, sender: str) -> tuple[str, ...]:
        """Everyone who reads a message sent to this group now, ``sender`` first, failing closed
        as a reply's audience does (connectors/telegram/audience.py): a consultation's follow-up
        there is decided for them (bot/consultations/flow.py). ValueError for a chat or identity that
        is not a Telegram group's."""
        chat, connection = parse_chat_key(chat_id)
        platform, _, user = sender.partition(":")
        if connection is not None or platform != PLATFORM or not user.isdigit():
            raise ValueError("not a Telegram group chat, or not a Telegram identity")
        bot = self._app.bot
        return await self.roster.audience(bot, chat, int(user), bot.id)

    async def send(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        """Deliver a message outside a reply (digest, approved reply) to an ``Inbound.chat_id``.

        A Business chat (``<chat>@<connection>``) is answered through its connection, as the
        owner, and only while the owner's connection is enabled: the bot cannot write into the
        owner's Business chats any other way, and must not answer from its own account there.
        Errors propagate (:class:`DeliveryFailed` after the retries): the caller decided this
        message matters and should learn it failed.
        """
        if not text.strip():
            return
        chat, connection_id = parse_chat_key(chat_id)
        if connection_id is not None:
            connection = await self.business.get(connection_id)
            if connection is None or not connection.usable_by(self._config.owner_user_id):
                raise DeliveryFailed("business_connection_unusable", 0, permanent=True)
        await self.delivery.send_text(TelegramTarget(chat, connection_id), text, self.buttons.markup(actions))

    async def _ask(self, inbound: Inbound) -> Outbound | None:
        """Call the agent; a failing handler is logged and answered with silence."""
        try:
            outbound = await self._handler(inbound)
        except Exception:
            log.exception("telegram.handler_failed", chat_kind=inbound.chat_kind, non_text=inbound.non_text)
            return None
        if not isinstance(outbound, Outbound):
            log.error("telegram.handler_bad_result", result_type=type(outbound).__name__)
            return None
        return outbound

    @staticmethod
    def _target(message: Message, *, quote: bool) -> TelegramTarget:
        """Back where ``message`` came from: its chat, its Business connection, its topic."""
        return TelegramTarget(
            message.chat.id,
            message.business_connection_id,
            message.message_id if quote else None,
            message.message_thread_id if message.is_topic_message else None,
        )

    # -- PTB wiring ------------------------------------------------------------------------------

    def _register_handlers(self) -> None:
        """One PTB handler per update kind; PTB stops at the first match in a group.

        Every message filter is anchored on an ``UpdateType``: ``filters.TEXT`` alone also
        matches Business messages, which must only reach the Business path. Commands are
        deliberately not split off: ``/allow ...`` goes to the agent as ordinary text.
        """
        add = self._app.add_handler
        guard = self._guard
        private = filters.ChatType.PRIVATE
        add(BusinessConnectionHandler(guard(self._on_business_connection)))
        add(MessageHandler(filters.UpdateType.BUSINESS_MESSAGE, guard(self._on_business_message)))
        add(MessageHandler(filters.UpdateType.EDITED_BUSINESS_MESSAGE, guard(self._ignore)))
        add(CallbackQueryHandler(guard(self._on_callback_query)))
        add(MessageHandler(filters.UpdateType.MESSAGE & private, guard(self._on_private)))
        add(MessageHandler(filters.UpdateType.EDITED_MESSAGE & private, guard(self._on_private_edited)))
        add(MessageHandler(filters.UpdateType.MESSAGE & filters.ChatType.GROUPS, guard(self._on_group)))
        add(ChatMemberHandler(guard(self._on_chat_member), ChatMemberHandler.ANY_CHAT_MEMBER))
        self._app.add_error_handler(self._on_error)

    def _guard(self, callback: _Callback) -> _Callback:
        """Wrap a PTB callback so no update can crash the connector, with the update id
        bound to every log line it produces."""

        async def guarded(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
            with request_context(PLATFORM, update_id=update.update_id):
                try:
                    await callback(update, context)
                except Exception:
                    log.exception("telegram.update_failed")

        return guarded

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Last resort for errors PTB itself catches (never the message text)."""
        error = context.error
        log.error(
            "telegram.ptb_error",
            error=type(error).__name__ if error else None,
            update_id=getattr(update, "update_id", None),
        )

    async def _ignore(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Edited Business messages: the original was already answered; stay silent."""

    # -- private chats -----------------------------------------------------------------------

    def _content(self, message: Message, *, strip_self: bool) -> tuple[str, str | None]:
        """The text for the agent and, when there is none usable, why (``non_text``)."""
        if message.text is None:
            return "", attachment_kind(message)
        text = strip_self_references(message, self._app.bot) if strip_self else message.text
        limit = self._config.max_text_len
        if len(text) > limit:
            return text[:limit], "too_long"
        return text, None

    async def _on_private(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.message
        if message is None or message.from_user is None or message.from_user.is_bot:
            return
        if filters.StatusUpdate.ALL.check_update(update):
            # pins, payments, shared users...: nothing to answer, but the agent records it
            await self._answer_direct(message, message.from_user, "", "service")
            return
        text, non_text = self._content(message, strip_self=True)
        await self._answer_direct(message, message.from_user, text, non_text)

    async def _on_private_edited(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """An edit is reported (text withheld) so the agent can audit it and decide."""
        message = update.edited_message
        if message is None or message.from_user is None or message.from_user.is_bot:
            return
        await self._answer_direct(message, message.from_user, "", "edited")

    async def _answer_direct(
        self, message: Message, sender: User, text: str, non_text: str | None, delegation: Delegation | None = None
    ) -> None:
        """A one-to-one chat: the sender is the whole audience."""
        who = identity(sender.id)
        inbound = Inbound(
            platform=PLATFORM,
            chat_id=chat_key(message.chat.id, message.business_connection_id),
            chat_kind="direct",
            sender=who,
            text=text,
            audience=(who,),
            message_id=str(message.message_id),
            sender_display_name=sender.full_name,
            time=message.date,
            non_text=non_text,
            delegation=delegation,
        )
        outbound = await self._ask(inbound)
        if outbound is not None:
            await self.delivery.deliver(outbound, self._target(message, quote=False))

    # -- Business ------------------------------------------------------------------------------

    async def _on_business_connection(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.business_connection is not None:
            await self.business.remember(update.business_connection)

    async def _on_business_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A customer wrote to the owner's Business account: answer as the owner.

        Never answered: the owner's own messages, anything from a bot (our own replies come
        back as the owner's messages with ``sender_business_bot`` set), connections that are
        disabled or may not reply, and connections made by anyone but the configured owner.
        """
        message = update.business_message
        if message is None or message.business_connection_id is None:
            return
        sender = message.from_user
        if sender is None or sender.is_bot or message.sender_business_bot is not None:
            return
        connection = await self.business.get(message.business_connection_id)
        if connection is None or not connection.enabled or not connection.can_reply:
            return
        if sender.id == connection.user_id:
            return
        if connection.user_id != self._config.owner_user_id:
            log.warning("telegram.business_connection_not_owner", connected_user=identity(connection.user_id))
            return
        if filters.StatusUpdate.ALL.check_update(update):
            return
        text, non_text = self._content(message, strip_self=False)
        await self._answer_direct(message, sender, text, non_text, delegation="dm")

    # -- groups ------------------------------------------------------------------------------

    async def _on_group(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Every group message teaches membership; only messages addressed to the bot by a
        person (not a bot, not an anonymous admin or channel) are forwarded."""
        message = update.message
        if message is None:
            return
        bot = self._app.bot
        self.roster.track(message, bot.id)
        if filters.StatusUpdate.ALL.check_update(update):
            return
        sender = message.from_user
        if sender is None or sender.is_bot or message.sender_chat is not None:
            return
        if not addressed_to(message, self._app.bot):
            return
        text, non_text = self._content(message, strip_self=True)
        audience, present = await self.roster.readers(bot, message.chat.id, sender.id, bot.id)
        inbound = Inbound(
            platform=PLATFORM,
            chat_id=str(message.chat.id),
            chat_kind="group",
            sender=identity(sender.id),
            text=text,
            audience=audience,
            present=present,
            message_id=str(message.message_id),
            sender_display_name=sender.full_name,
            time=message.date,
            non_text=non_text,
        )
        outbound = await self._ask(inbound)
        if outbound is not None:
            await self.delivery.deliver(outbound, self._target(message, quote=True))

    async def _on_chat_member(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """``chat_member`` updates (sent when the bot is an admin) keep membership exact;
        ``my_chat_member`` telling us the bot left drops the chat's state."""
        change = update.chat_member or update.my_chat_member
        if change is None or change.chat.type not in (ChatType.GROUP, ChatType.SUPERGROUP):
            return
        self.roster.on_member_update(change, self._app.bot.id)

    # -- buttons ---------------------------------------------------------------------------------

    async def _on_callback_query(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A button press is a message from the presser whose text is the button's command;
        the answer goes to the chat holding the button.

        Never one on a message of the owner's Business chats: the bot puts no buttons there, and
        anything answering a press there would go out as the owner (a contact's forged
        ``/approve``, a question past ``/delegate silent``). It is acknowledged without a word."""
        query = update.callback_query
        if query is None:
            return
        source = query.message
        if isinstance(source, Message) and source.business_connection_id is not None:
            log.warning("telegram.business_callback_ignored")
            await self._acknowledge(query, None)
            return
        presser = query.from_user
        command = self.buttons.resolve(query.data) if query.data is not None else None
        await self._acknowledge(query, None if command is not None else "This button has expired.")
        if command is None or presser.is_bot:
            return
        where = await self._button_chat(
            presser, source.chat.id if source else None, source.chat.type if source else None
        )
        if where is None:
            return  # channels: no person-to-person conversation to join
        chat_id, chat_kind, audience = where
        inbound = Inbound(
            platform=PLATFORM,
            chat_id=str(chat_id),
            chat_kind=chat_kind,
            sender=identity(presser.id),
            text=command,
            audience=audience,
            message_id=None,
            sender_display_name=presser.full_name,
        )
        outbound = await self._ask(inbound)
        if outbound is not None:
            await self.delivery.deliver(outbound, TelegramTarget(chat_id))

    @staticmethod
    async def _acknowledge(query: CallbackQuery, text: str | None) -> None:
        """Stop the pressed button's spinner (``text``: a toast only the presser sees)."""
        try:
            await query.answer(text=text)
        except TelegramError as exc:
            log.warning("telegram.callback_answer_failed", error=type(exc).__name__)

    async def _button_chat(
        self, presser: User, chat_id: int | None, chat_type: str | None
    ) -> tuple[int, ChatKind, tuple[str, ...]] | None:
        """The chat a pressed button lives in, its kind and who reads the answer there."""
        who = identity(presser.id)
        if chat_id is None:
            return presser.id, "direct", (who,)
        if chat_type in (ChatType.GROUP, ChatType.SUPERGROUP):
            self.roster.see(chat_id, presser)
            bot = self._app.bot
            return chat_id, "group", await self.roster.audience(bot, chat_id, presser.id, bot.id)
        if chat_type == ChatType.PRIVATE:
            return chat_id, "direct", (who,)
        return None
