"""Telegram adapter: python-telegram-bot updates in, :class:`Inbound`; :class:`Outbound` back out.

The connector only translates.  Every decision about *what* to say belongs to the agent's
handler; what the connector owns is telling the agent truthfully *who* will read the reply.
That is why group audiences fail closed: Telegram will not list a group's members to a bot,
so the connector names everyone it has seen and adds a placeholder identity for every member
it cannot name (the agent treats unknown identities as strangers).  Dropping an unknown
reader would let a private answer reach someone the policy never cleared.

Identities are always ``telegram:<numeric user id>``: usernames and display names can be
changed by their holder at will, so they never decide anything (display names travel only in
``sender_display_name``, for wording).

Transport: PTB's ``Updater`` long-polls (or serves a webhook); the application's handlers call
into this class.  PTB's one network seam is its request object, which is built here with
``trust_env=False`` so proxy variables in the environment never redirect the bot's traffic.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import structlog
from telegram import (
    ChatMember,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    MessageEntity,
    Update,
    User,
)
from telegram.constants import ChatMemberStatus, ChatType, MessageAttachmentType
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    ApplicationBuilder,
    BusinessConnectionHandler,
    CallbackQueryHandler,
    ChatMemberHandler,
    ContextTypes,
    MessageHandler,
    filters,
)
from telegram.request import HTTPXRequest

from connectors.base import Action, ChatKind, Handler, Inbound, Outbound, request_context

log = structlog.get_logger(__name__)

PLATFORM = "telegram"
#: Telegram refuses callback_data longer than this many bytes.
CALLBACK_DATA_MAX_BYTES = 64
#: Telegram refuses message texts longer than this (counted in UTF-16 code units).
MESSAGE_MAX_UTF16 = 4096
#: prefix of the short keys that stand in for long button commands.
_CALLBACK_KEY_PREFIX = "cb#"
_CALLBACK_STORE_MAX = 4096
#: at most this many stale members are re-checked with getChatMember per addressed message;
#: the rest stay unconfirmed, which only adds placeholders (never hides anyone).
_MAX_MEMBER_CHECKS = 50
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
#: attachment kinds in the order they are checked (an animation also carries a document,
#: a venue also carries a location), reported to the agent as ``Inbound.non_text``.
_ATTACHMENT_KINDS: tuple[str, ...] = (
    MessageAttachmentType.STICKER,
    MessageAttachmentType.ANIMATION,
    MessageAttachmentType.PHOTO,
    MessageAttachmentType.VOICE,
    MessageAttachmentType.VIDEO_NOTE,
    MessageAttachmentType.VIDEO,
    MessageAttachmentType.AUDIO,
    MessageAttachmentType.DOCUMENT,
    MessageAttachmentType.CONTACT,
    MessageAttachmentType.VENUE,
    MessageAttachmentType.LOCATION,
    MessageAttachmentType.POLL,
    MessageAttachmentType.DICE,
    MessageAttachmentType.GAME,
    MessageAttachmentType.STORY,
    MessageAttachmentType.INVOICE,
    MessageAttachmentType.PAID_MEDIA,
    MessageAttachmentType.SUCCESSFUL_PAYMENT,
    MessageAttachmentType.PASSPORT_DATA,
)

_Callback = Callable[[Update, ContextTypes.DEFAULT_TYPE], Coroutine[Any, Any, None]]


@dataclass(frozen=True, slots=True)
class TelegramConfig:
    """Everything the connector needs, passed explicitly (no environment reads here).

    ``owner_user_id`` is the owner's numeric Telegram id: ``Outbound.to_owner`` goes to that
    private chat, and Business connections are honoured only when made by that user (a
    stranger connecting the bot to their own Business account must not get the owner's
    delegate answering in their chats).  ``poll_timeout``/``poll_interval`` tune long
    polling (tests use 1 s / 0); ``membership_ttl_seconds`` is how long a chat's
    administrator list and a member's confirmed presence are trusted before re-asking.
    """

    token: str = field(repr=False)
    base_url: str = "https://api.telegram.org/bot"
    webhook_url: str | None = None
    webhook_listen: str = "0.0.0.0"
    webhook_port: int = 8443
    owner_user_id: int | None = None
    max_text_len: int = 4000
    secret_token: str | None = field(default=None, repr=False)
    poll_timeout: float = 10.0
    poll_interval: float = 0.0
    membership_ttl_seconds: float = 300.0


@dataclass(slots=True)
class _Members:
    """Who the bot has seen in one group, with the monotonic time each presence is
    trusted until (a message or join proves presence now; silence ages it out)."""

    humans: dict[int, float] = field(default_factory=dict)
    bots: dict[int, float] = field(default_factory=dict)

    def see(self, user: User, until: float) -> None:
        (self.bots if user.is_bot else self.humans)[user.id] = until

    def forget(self, user_id: int) -> None:
        self.humans.pop(user_id, None)
        self.bots.pop(user_id, None)

    def confirm(self, user_id: int, until: float) -> None:
        for table in (self.humans, self.bots):
            if user_id in table:
                table[user_id] = until


@dataclass(frozen=True, slots=True)
class _Admins:
    """A cached getChatAdministrators answer, split into people and bots."""

    expires: float
    humans: frozenset[int]
    bots: frozenset[int]


@dataclass(frozen=True, slots=True)
class _BusinessConnection:
    """What a ``business_connection`` update told us: whose account, and may we reply."""

    user_id: int
    enabled: bool
    can_reply: bool


class _RedactToken(logging.Filter):
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


def identity(user_id: int) -> str:
    """The platform identity of a Telegram user: numeric id only, never a name."""
    return f"{PLATFORM}:{user_id}"


def unknown_identity(chat_id: int, n: int) -> str:
    """A stand-in for the n-th group member the bot cannot name (a stranger to the agent)."""
    return f"{PLATFORM}:unknown-{chat_id}-{n}"


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _remove_utf16_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """Cut (offset, length) spans out of ``text``; Telegram entity offsets count UTF-16
    code units, so slicing the Python string directly would misplace them after emoji."""
    encoded = text.encode("utf-16-le")
    for offset, length in sorted(spans, reverse=True):
        encoded = encoded[: offset * 2] + encoded[(offset + length) * 2 :]
    return encoded.decode("utf-16-le")


def _tidy(text: str) -> str:
    """Collapse the double spaces a removed mention leaves behind; keep line breaks."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(lines).strip()


def chunk_text(text: str, limit: int = MESSAGE_MAX_UTF16) -> list[str]:
    """Split ``text`` into pieces Telegram accepts, preferring line breaks and spaces."""
    chunks: list[str] = []
    rest = text
    while _utf16_len(rest) > limit:
        cut = 0
        used = 0
        for i, ch in enumerate(rest):
            used += 2 if ord(ch) > 0xFFFF else 1
            if used > limit:
                break
            cut = i + 1
        window = rest[:cut]
        split = max(window.rfind("\n"), window.rfind(" "))
        if split > cut // 2:
            cut = split + 1
        chunks.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        chunks.append(rest)
    return chunks


def _is_present(member: ChatMember) -> bool:
    """Whether a chat member status means the user is in the chat (and reads it)."""
    if member.status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
        return False
    if member.status == ChatMemberStatus.RESTRICTED:
        return bool(getattr(member, "is_member", False))
    return True


def attachment_kind(message: Message) -> str:
    """What a text-less message carries (``sticker``, ``photo``...), for ``non_text``."""
    for kind in _ATTACHMENT_KINDS:
        if getattr(message, str(kind), None):
            return str(kind)
    return "unsupported"


class TelegramConnector:
    """Runs a PTB application and translates between Telegram and the agent's handler.

    State kept in memory only (rebuilt from traffic after a restart): group members seen,
    cached administrator lists, Business connections, which route (direct or Business) a
    chat last used, and the short keys standing in for long button commands.
    """

    platform = PLATFORM

    def __init__(self, config: TelegramConfig, handler: Handler) -> None:
        self._config = config
        self._handler = handler
        self._app: Application[Any, Any, Any, Any, Any, Any] = (
            ApplicationBuilder()
            .token(config.token)
            .base_url(config.base_url)
            .request(HTTPXRequest(httpx_kwargs={"trust_env": False}))
            .get_updates_request(HTTPXRequest(httpx_kwargs={"trust_env": False}))
            .build()
        )
        self._register_handlers()
        self._groups: dict[int, _Members] = {}
        self._admins: dict[int, _Admins] = {}
        self._connections: dict[str, _BusinessConnection] = {}
        #: chat id -> Business connection id the chat was last reached through (None: direct).
        self._routes: dict[int, str | None] = {}
        self._callback_commands: OrderedDict[str, str] = OrderedDict()
        self._lock = asyncio.Lock()
        self._initialized = False
        self._redactor = _RedactToken(config.token)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def application(self) -> Application[Any, Any, Any, Any, Any, Any]:
        """The PTB application (for callers that need to add their own handlers)."""
        return self._app

    @property
    def running(self) -> bool:
        return bool(self._app.running)

    async def start(self) -> None:
        """Initialise (getMe), start the application, then poll or serve the webhook.

        Returns once updates are flowing.  Calling it while running does nothing; if a step
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
                updater = self._app.updater
                if updater is None:  # pragma: no cover - ApplicationBuilder always makes one
                    raise RuntimeError("PTB application has no updater")
                if self._config.webhook_url:
                    if not self._config.secret_token:
                        log.warning("telegram.webhook_without_secret_token")
                    await updater.start_webhook(
                        listen=self._config.webhook_listen,
                        port=self._config.webhook_port,
                        url_path=urlparse(self._config.webhook_url).path.lstrip("/"),
                        webhook_url=self._config.webhook_url,
                        allowed_updates=list(ALLOWED_UPDATES),
                        secret_token=self._config.secret_token,
                    )
                else:
                    await updater.start_polling(
                        poll_interval=self._config.poll_interval,
                        timeout=int(self._config.poll_timeout),
                        allowed_updates=list(ALLOWED_UPDATES),
                        error_callback=self._on_polling_error,
                    )
            except BaseException:
                await self._stop_locked()
                raise
            bot = self._app.bot
            mode = "webhook" if self._config.webhook_url else "polling"
            log.info("telegram.started", bot_id=bot.id, mode=mode)

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

    async def send(self, chat_id: str, text: str, actions: tuple[Action, ...] = ()) -> None:
        """Deliver a message outside a reply (digest, approved reply).

        A chat last reached through a Business connection is answered through it again,
        since the bot cannot write into the owner's Business chats any other way.  Errors
        propagate: the caller decided this message matters and should learn it failed.
        """
        if not text.strip():
            return
        chat = int(chat_id)
        connection_id = self._routes.get(chat)
        if connection_id is not None:
            connection = self._connections.get(connection_id)
            if connection is None or not connection.enabled:
                connection_id = None
        await self._send_text(
            chat, text, self._markup(actions), business_connection_id=connection_id
        )

    async def _send_text(
        self,
        chat_id: int,
        text: str,
        markup: InlineKeyboardMarkup | None,
        *,
        business_connection_id: str | None = None,
    ) -> None:
        """Send ``text`` (split if too long; buttons on the last piece)."""
        pieces = chunk_text(text)
        for i, piece in enumerate(pieces):
            await self._app.bot.send_message(
                chat_id=chat_id,
                text=piece,
                reply_markup=markup if i == len(pieces) - 1 else None,
                business_connection_id=business_connection_id,
            )

    async def _reply(
        self, message: Message, text: str, markup: InlineKeyboardMarkup | None, *, quote: bool
    ) -> None:
        """Answer ``message`` in its chat; ``message.reply_text`` carries the Business
        connection id when the message came through one."""
        pieces = chunk_text(text)
        for i, piece in enumerate(pieces):
            await message.reply_text(
                piece,
                do_quote=quote and i == 0,
                reply_markup=markup if i == len(pieces) - 1 else None,
            )

    def _markup(self, actions: Sequence[Action]) -> InlineKeyboardMarkup | None:
        """One button per action: a single row for up to three, else one per row."""
        if not actions:
            return None
        buttons = [
            InlineKeyboardButton(action.label, callback_data=self._callback_data(action.command))
            for action in actions
        ]
        rows = [buttons] if len(buttons) <= 3 else [[button] for button in buttons]
        return InlineKeyboardMarkup(rows)

    def _callback_data(self, command: str) -> str:
        """The command itself when Telegram accepts it, else a short key kept in memory.

        Commands that look like our keys are stored too, so a key can never be mistaken
        for a command or the other way round.
        """
        size = len(command.encode("utf-8"))
        if 0 < size <= CALLBACK_DATA_MAX_BYTES and not command.startswith(_CALLBACK_KEY_PREFIX):
            return command
        key = _CALLBACK_KEY_PREFIX + secrets.token_urlsafe(12)
        self._callback_commands[key] = command
        while len(self._callback_commands) > _CALLBACK_STORE_MAX:
            self._callback_commands.popitem(last=False)
        return key

    def _resolve_callback(self, data: str) -> str | None:
        """The command behind a button's data; None for a key we no longer hold."""
        if data.startswith(_CALLBACK_KEY_PREFIX):
            return self._callback_commands.get(data)
        return data

    async def _deliver(
        self,
        outbound: Outbound,
        *,
        message: Message | None = None,
        chat_id: int | None = None,
        business_connection_id: str | None = None,
        quote: bool = False,
    ) -> None:
        """Send the agent's answer back where the question came from, and ``to_owner``
        to the owner's private chat.

        ``text`` None (or blank) sends nothing there.  The buttons ride on the reply; when
        there is no reply text they go with the ``to_owner`` message instead, so a held
        message's approve/reject buttons are not lost.
        """
        markup = self._markup(outbound.actions)
        has_text = outbound.text is not None and bool(outbound.text.strip())
        if outbound.text is not None and has_text:
            try:
                if message is not None:
                    await self._reply(message, outbound.text, markup, quote=quote)
                elif chat_id is not None:
                    await self._send_text(
                        chat_id,
                        outbound.text,
                        markup,
                        business_connection_id=business_connection_id,
                    )
            except TelegramError as exc:
                log.error("telegram.reply_failed", error=type(exc).__name__, detail=str(exc))
        if outbound.to_owner:
            owner = self._config.owner_user_id
            if owner is None:
                log.warning("telegram.to_owner_dropped", reason="owner_user_id not configured")
                return
            try:
                await self._send_text(owner, outbound.to_owner, None if has_text else markup)
            except TelegramError as exc:
                log.error("telegram.to_owner_failed", error=type(exc).__name__, detail=str(exc))

    async def _ask(self, inbound: Inbound) -> Outbound | None:
        """Call the agent; a failing handler is logged and answered with silence."""
        try:
            outbound = await self._handler(inbound)
        except Exception:
            log.exception(
                "telegram.handler_failed", chat_kind=inbound.chat_kind, non_text=inbound.non_text
            )
            return None
        if not isinstance(outbound, Outbound):
            log.error("telegram.handler_bad_result", result_type=type(outbound).__name__)
            return None
        return outbound

    # -- PTB wiring ------------------------------------------------------------------------------

    def _register_handlers(self) -> None:
        """One PTB handler per update kind; PTB stops at the first match in a group.

        Every message filter is anchored on an ``UpdateType``: ``filters.TEXT`` alone also
        matches Business messages, which must only reach the Business path.  Commands are
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
        add(
            MessageHandler(
                filters.UpdateType.EDITED_MESSAGE & private, guard(self._on_private_edited)
            )
        )
        add(
            MessageHandler(
                filters.UpdateType.MESSAGE & filters.ChatType.GROUPS, guard(self._on_group)
            )
        )
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
        text = self._strip_self_references(message) if strip_self else message.text
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
            await self._answer_direct(message, message.from_user, "", "service", connection_id=None)
            return
        text, non_text = self._content(message, strip_self=True)
        await self._answer_direct(message, message.from_user, text, non_text, connection_id=None)

    async def _on_private_edited(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """An edit is reported (text withheld) so the agent can audit it and decide."""
        message = update.edited_message
        if message is None or message.from_user is None or message.from_user.is_bot:
            return
        await self._answer_direct(message, message.from_user, "", "edited", connection_id=None)

    async def _answer_direct(
        self,
        message: Message,
        sender: User,
        text: str,
        non_text: str | None,
        *,
        connection_id: str | None,
    ) -> None:
        """A one-to-one chat: the sender is the whole audience."""
        who = identity(sender.id)
        self._routes[message.chat.id] = connection_id
        inbound = Inbound(
            platform=PLATFORM,
            chat_id=str(message.chat.id),
            chat_kind="direct",
            sender=who,
            text=text,
            audience=(who,),
            message_id=str(message.message_id),
            sender_display_name=sender.full_name,
            time=message.date,
            non_text=non_text,
        )
        outbound = await self._ask(inbound)
        if outbound is not None:
            await self._deliver(outbound, message=message, quote=False)

    # -- Business ------------------------------------------------------------------------------

    async def _on_business_connection(
        self, update: Update, context: ContextTypes.DEFAULT_TYPE
    ) -> None:
        connection = update.business_connection
        if connection is None:
            return
        rights = connection.rights
        self._connections[connection.id] = _BusinessConnection(
            user_id=connection.user.id,
            enabled=connection.is_enabled,
            can_reply=rights is None or bool(rights.can_reply),
        )
        log.info(
            "telegram.business_connection",
            connected_user=identity(connection.user.id),
            enabled=connection.is_enabled,
        )

    async def _business_connection(self, connection_id: str) -> _BusinessConnection | None:
        """The connection behind a Business message; asked of Telegram when it predates
        this process.  None when unknowable: without the owner's id we cannot tell the
        owner's own messages from a customer's, so such messages are not answered."""
        known = self._connections.get(connection_id)
        if known is not None:
            return known
        try:
            fetched = await self._app.bot.get_business_connection(connection_id)
        except TelegramError as exc:
            log.warning("telegram.business_connection_unknown", error=type(exc).__name__)
            return None
        rights = fetched.rights
        known = _BusinessConnection(
            user_id=fetched.user.id,
            enabled=fetched.is_enabled,
            can_reply=rights is None or bool(rights.can_reply),
        )
        self._connections[connection_id] = known
        return known

    async def _on_business_message(
        self, update: Update, context: ContextTypes.DEFAULT_TYPE
    ) -> None:
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
        connection = await self._business_connection(message.business_connection_id)
        if connection is None or not connection.enabled or not connection.can_reply:
            return
        if sender.id == connection.user_id:
            return
        if connection.user_id != self._config.owner_user_id:
            log.warning(
                "telegram.business_connection_not_owner",
                connected_user=identity(connection.user_id),
            )
            return
        if filters.StatusUpdate.ALL.check_update(update):
            return
        text, non_text = self._content(message, strip_self=False)
        await self._answer_direct(
            message, sender, text, non_text, connection_id=message.business_connection_id
        )

    # -- groups ------------------------------------------------------------------------------

    def _members(self, chat_id: int) -> _Members:
        return self._groups.setdefault(chat_id, _Members())

    def _forget_chat(self, chat_id: int) -> None:
        self._groups.pop(chat_id, None)
        self._admins.pop(chat_id, None)

    def _track_membership(self, message: Message) -> None:
        """Update what we know of a group's members from any message, service or not."""
        chat_id = message.chat.id
        bot_id = self._app.bot.id
        now = time.monotonic()
        ttl = self._config.membership_ttl_seconds
        if message.migrate_to_chat_id is not None:
            members = self._groups.pop(chat_id, None)
            self._admins.pop(chat_id, None)
            if members is not None:
                self._groups[message.migrate_to_chat_id] = members
            return
        members = self._members(chat_id)
        for user in message.new_chat_members or ():
            members.see(user, now + ttl)
        left = message.left_chat_member
        if left is not None:
            if left.id == bot_id:
                self._forget_chat(chat_id)
                return
            members.forget(left.id)
            admins = self._admins.get(chat_id)
            if admins is not None and left.id in admins.humans | admins.bots:
                self._admins.pop(chat_id, None)
        sender = message.from_user
        if sender is not None and message.sender_chat is None and left is None:
            members.see(sender, now + ttl)

    def _addressed_to_bot(self, message: Message) -> bool:
        """Mentioned by username (or text mention), ``/cmd@bot``, or a reply to the bot."""
        if message.text is not None:
            entities = message.parse_entities()
        else:
            entities = message.parse_caption_entities()
        if any(self._refers_to_bot(entity, part) for entity, part in entities.items()):
            return True
        replied = message.reply_to_message
        author = replied.from_user if replied is not None else None
        return author is not None and author.id == self._app.bot.id

    def _refers_to_bot(self, entity: MessageEntity, part: str) -> bool:
        """Whether an entity names this bot: ``@bot``, a text mention, or ``/cmd@bot``."""
        bot = self._app.bot
        handle = f"@{bot.username}".lower()
        if entity.type == MessageEntity.MENTION:
            return part.lower() == handle
        if entity.type == MessageEntity.TEXT_MENTION:
            return entity.user is not None and entity.user.id == bot.id
        if entity.type == MessageEntity.BOT_COMMAND:
            return part.lower().endswith(handle)
        return False

    def _strip_self_references(self, message: Message) -> str:
        """The text without mentions of the bot and with ``/cmd@bot`` shortened to ``/cmd``."""
        text = message.text or ""
        handle_size = _utf16_len(f"@{self._app.bot.username}")
        spans: list[tuple[int, int]] = []
        for entity, part in message.parse_entities().items():
            if not self._refers_to_bot(entity, part):
                continue
            if entity.type == MessageEntity.BOT_COMMAND:  # keep the command, drop "@bot"
                spans.append((entity.offset + entity.length - handle_size, handle_size))
            else:
                spans.append((entity.offset, entity.length))
        if not spans:
            return text
        return _tidy(_remove_utf16_spans(text, spans))

    async def _on_group(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Every group message teaches membership; only messages addressed to the bot by a
        person (not a bot, not an anonymous admin or channel) are forwarded."""
        message = update.message
        if message is None:
            return
        self._track_membership(message)
        if filters.StatusUpdate.ALL.check_update(update):
            return
        sender = message.from_user
        if sender is None or sender.is_bot or message.sender_chat is not None:
            return
        if not self._addressed_to_bot(message):
            return
        text, non_text = self._content(message, strip_self=True)
        audience = await self._group_audience(message.chat.id, sender.id)
        inbound = Inbound(
            platform=PLATFORM,
            chat_id=str(message.chat.id),
            chat_kind="group",
            sender=identity(sender.id),
            text=text,
            audience=audience,
            message_id=str(message.message_id),
            sender_display_name=sender.full_name,
            time=message.date,
            non_text=non_text,
        )
        outbound = await self._ask(inbound)
        if outbound is not None:
            await self._deliver(outbound, message=message, quote=True)

    async def _chat_admins(self, chat_id: int) -> _Admins | None:
        """Administrators (cached for ``membership_ttl_seconds``); None when Telegram
        will not say, in which case the member count turns them into placeholders."""
        now = time.monotonic()
        cached = self._admins.get(chat_id)
        if cached is not None and cached.expires > now:
            return cached
        try:
            admins = await self._app.bot.get_chat_administrators(chat_id)
        except TelegramError as exc:
            log.warning("telegram.admins_unavailable", error=type(exc).__name__)
            return None
        fresh = _Admins(
            expires=now + self._config.membership_ttl_seconds,
            humans=frozenset(a.user.id for a in admins if not a.user.is_bot),
            bots=frozenset(a.user.id for a in admins if a.user.is_bot),
        )
        self._admins[chat_id] = fresh
        return fresh

    async def _still_member(self, chat_id: int, user_id: int) -> bool | None:
        """Whether a user is still in the chat; None when Telegram will not say."""
        try:
            member = await self._app.bot.get_chat_member(chat_id, user_id)
        except TelegramError as exc:
            log.warning("telegram.member_check_failed", error=type(exc).__name__)
            return None
        return _is_present(member)

    async def _group_audience(self, chat_id: int, sender_id: int) -> tuple[str, ...]:
        """Everyone who may read a reply in this group, failing closed.

        Named: the sender, every person seen in the chat, the administrators.  Then the
        member count decides how many readers we cannot name; each becomes a placeholder.
        Only members whose presence is confirmed (recent message or join, admin list, or a
        getChatMember check) are subtracted from the count, so someone who left unseen can
        never hide a newcomer; a member we could not check stays named *and* uncounted.
        When the count itself is unavailable one placeholder still marks the audience as
        not fully known.
        """
        bot_id = self._app.bot.id
        members = self._members(chat_id)
        admins = await self._chat_admins(chat_id)
        admin_humans = admins.humans if admins is not None else frozenset()
        admin_bots = admins.bots if admins is not None else frozenset()
        now = time.monotonic()
        confirmed: set[int] = {bot_id, sender_id, *admin_humans, *admin_bots}
        stale: list[int] = []
        for user_id, until in (*members.humans.items(), *members.bots.items()):
            if user_id in confirmed:
                continue
            if until > now:
                confirmed.add(user_id)
            else:
                stale.append(user_id)
        checked = stale[:_MAX_MEMBER_CHECKS]
        results = await asyncio.gather(
            *(self._still_member(chat_id, user_id) for user_id in checked)
        )
        until = time.monotonic() + self._config.membership_ttl_seconds
        for user_id, present in zip(checked, results, strict=True):
            if present is False:
                members.forget(user_id)
            elif present:
                members.confirm(user_id, until)
                confirmed.add(user_id)

        bots = set(members.bots) | set(admin_bots) | {bot_id}
        humans = (set(members.humans) | set(admin_humans) | {sender_id}) - bots
        audience = [identity(sender_id)]
        audience += [identity(user_id) for user_id in sorted(humans - {sender_id})]
        try:
            count = await self._app.bot.get_chat_member_count(chat_id)
        except TelegramError as exc:
            log.warning("telegram.member_count_unavailable", error=type(exc).__name__)
            unknown = 1
        else:
            unknown = count - len(confirmed)
        audience += [unknown_identity(chat_id, n) for n in range(1, unknown + 1)]
        return tuple(audience)

    async def _on_chat_member(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """``chat_member`` updates (sent when the bot is an admin) keep membership exact;
        ``my_chat_member`` telling us the bot left drops the chat's state."""
        change = update.chat_member or update.my_chat_member
        if change is None or change.chat.type not in (ChatType.GROUP, ChatType.SUPERGROUP):
            return
        member = change.new_chat_member
        present = _is_present(member)
        if member.user.id == self._app.bot.id:
            if not present:
                self._forget_chat(change.chat.id)
            return
        members = self._members(change.chat.id)
        if present:
            members.see(member.user, time.monotonic() + self._config.membership_ttl_seconds)
        else:
            members.forget(member.user.id)
        self._admins.pop(change.chat.id, None)

    # -- buttons ---------------------------------------------------------------------------------

    async def _on_callback_query(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A button press is a message from the presser whose text is the button's command;
        the answer goes to the chat holding the button."""
        query = update.callback_query
        if query is None:
            return
        presser = query.from_user
        command = self._resolve_callback(query.data) if query.data is not None else None
        try:
            await query.answer(text=None if command is not None else "This button has expired.")
        except TelegramError as exc:
            log.warning("telegram.callback_answer_failed", error=type(exc).__name__)
        if command is None or presser.is_bot:
            return
        who = identity(presser.id)
        source = query.message
        chat_kind: ChatKind = "direct"
        connection_id: str | None = None
        if source is None:
            chat_id = presser.id
            audience: tuple[str, ...] = (who,)
        else:
            chat_id = source.chat.id
            if isinstance(source, Message):
                connection_id = source.business_connection_id
            if source.chat.type in (ChatType.GROUP, ChatType.SUPERGROUP):
                chat_kind = "group"
                until = time.monotonic() + self._config.membership_ttl_seconds
                self._members(chat_id).see(presser, until)
                audience = await self._group_audience(chat_id, presser.id)
            elif source.chat.type == ChatType.PRIVATE:
                audience = (who,)
            else:
                return  # channels: no person-to-person conversation to join
        if connection_id is not None:
            connection = await self._business_connection(connection_id)
            if (
                connection is None
                or not connection.enabled
                or connection.user_id != self._config.owner_user_id
            ):
                return
        inbound = Inbound(
            platform=PLATFORM,
            chat_id=str(chat_id),
            chat_kind=chat_kind,
            sender=who,
            text=command,
            audience=audience,
            message_id=None,
            sender_display_name=presser.full_name,
        )
        outbound = await self._ask(inbound)
        if outbound is not None:
            await self._deliver(outbound, chat_id=chat_id, business_connection_id=connection_id)
