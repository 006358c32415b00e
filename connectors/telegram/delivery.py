"""The one way a Telegram message leaves: paced per chat, retried on flood control, reported.

Every ``sendMessage`` goes through a :class:`~connectors.courier.Courier` on three lanes:
the chat (about one message a second), a group's minute (20 a minute) and the bot as a whole
(30 a second). Telegram's ``retry_after`` (PTB's :class:`~telegram.error.RetryAfter`) holds
the chat for as long as asked; network errors back off; a refusal (blocked, chat not found,
bad request) is final; a timeout once the request was sent is not retried (``sendMessage`` is
not idempotent: a retry could post the message twice) and is reported as maybe delivered. Whatever the outcome, the host hears of it through
:meth:`PlatformState.report`: a reply that finally failed is kept there and the owner told.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import httpx
import structlog
from telegram import Bot, InlineKeyboardMarkup, LinkPreviewOptions, ReplyParameters
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)

from connectors.base import DeliveryKind, DeliveryReport, Outbound, PlatformState
from connectors.courier import Courier, DeliveryFailed, Lane, DeliveryVerdict
from connectors.telegram.buttons import Buttons
from connectors.telegram.config import PLATFORM, TelegramConfig, chat_key
from connectors.telegram.text import chunk_text

log = structlog.get_logger(__name__)

#: no message shows a link preview (a URL in a quoted question must not draw a card in a note to
#: the owner, nor a preview of a contact's link anywhere); no parse mode either: texts are plain.
_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


def retry_after_seconds(exc: RetryAfter) -> float:
    """PTB 22 gives ``retry_after`` as int or timedelta (and warns about the change)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def classify(exc: BaseException) -> DeliveryVerdict:
    """Telegram's answer to a failed send: wait as told, try again, or stop."""
    if isinstance(exc, RetryAfter):
        return DeliveryVerdict("retry_after", "retry_after", retry_after_seconds(exc))
    # BadRequest is a NetworkError in PTB: check the final refusals first
    if isinstance(exc, (BadRequest, Forbidden, InvalidToken, ChatMigrated)):
        return DeliveryVerdict("permanent", type(exc).__name__)
    if isinstance(exc, TimedOut) and not isinstance(exc.__cause__, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        # the request went out and no answer came: Telegram may have posted it already
        return DeliveryVerdict("ambiguous", "TimedOut")
    if isinstance(exc, NetworkError):
        return DeliveryVerdict("transient", type(exc).__name__)
    return DeliveryVerdict("permanent", type(exc).__name__)


@dataclass(frozen=True, slots=True)
class TelegramTarget:
    """Where one message goes: a chat, maybe through a Business connection, maybe quoting a
    message or inside a forum topic."""

    chat_id: int
    business_connection_id: str | None = None
    reply_to: int | None = None
    thread_id: int | None = None

    @property
    def key(self) -> str:
        return chat_key(self.chat_id, self.business_connection_id)


class TelegramDelivery:
    """Sends texts (split to Telegram's limit) and reports each outcome to the host."""

    def __init__(self, bot: Callable[[], Bot], config: TelegramConfig, state: PlatformState, buttons: Buttons) -> None:
        self._bot = bot
        self._config = config
        self._state = state
        self.buttons = buttons
        self.courier = Courier(classify, config.retry, config.timer)

    def lanes(self, chat_id: int) -> list[Lane]:
        """The chat first (a told wait holds it), a group's minute budget, the whole bot."""
        pacing = self._config.pacing
        lanes = [Lane(f"chat:{chat_id}", pacing.chat)]
        if chat_id < 0:  # groups, supergroups and channels have negative ids
            lanes.append(Lane(f"chat:{chat_id}:group", pacing.group))
        lanes.append(Lane("bot", pacing.overall))
        return lanes

    async def send_text(self, target: TelegramTarget, text: str, markup: InlineKeyboardMarkup | None) -> int:
        """Send ``text`` in pieces (buttons on the last, the quote on the first); the most
        attempts any piece took. :class:`DeliveryFailed` names what did not go out."""
        pieces = chunk_text(text)
        lanes = self.lanes(target.chat_id)
        most = 0
        for i, piece in enumerate(pieces):
            quote = (
                ReplyParameters(target.reply_to, allow_sending_without_reply=True)
                if target.reply_to is not None and i == 0
                else None
            )

            def call(
                piece: str = piece, last: bool = i == len(pieces) - 1, quote: ReplyParameters | None = quote
            ) -> Awaitable[object]:
                return self._bot().send_message(
                    chat_id=target.chat_id,
                    text=piece,
                    reply_markup=markup if last else None,
                    business_connection_id=target.business_connection_id,
                    reply_parameters=quote,
                    message_thread_id=target.thread_id,
                    link_preview_options=_NO_PREVIEW,
                )

            try:
                _, delivered = await self.courier.send(lanes, call)
            except DeliveryFailed as exc:
                exc.remaining = "".join(pieces[i:])
                exc.unknown = exc.unknown or i > 0  # the first pieces were read
                raise
            most = max(most, delivered.attempts)
        return most

    async def deliver(self, outbound: Outbound, target: TelegramTarget) -> None:
        """The agent's answer where the question was asked, and ``to_owner`` to the owner.

        Text None (or blank) sends nothing there. The buttons ride on the reply, unless the
        answer carries a ``to_owner`` note: then they are the owner's (approve a held reply,
        answer a consultation) and go on that note, never on the reply another person reads.
        """
        markup = self.buttons.markup(outbound.actions)
        has_text = outbound.text is not None and bool(outbound.text.strip())
        if outbound.text is not None and has_text:
            await self.reported(
                "reply", target, outbound.text, None if outbound.to_owner else markup, outbound.audit_id
            )
        outbound.delivered()  # the reply is out: what waits for that may start
        if outbound.to_owner:
            owner = self._config.owner_user_id
            if owner is None:
                log.warning("telegram.to_owner_unroutable", reason="owner_user_id not configured")
                await self._report(
                    "owner_note", "owner", False, 0, outbound.audit_id, "no_owner_chat", outbound.to_owner
                )
                return
            await self.reported("owner_note", TelegramTarget(owner), outbound.to_owner, markup, outbound.audit_id)

    async def reported(
        self,
        kind: DeliveryKind,
        target: TelegramTarget,
        text: str,
        markup: InlineKeyboardMarkup | None,
        audit_id: str | None,
    ) -> bool:
        """Send and tell the host how it went; never raises for a failed delivery."""
        try:
            attempts = await self.send_text(target, text, markup)
        except DeliveryFailed as exc:
            log.error(
                "telegram.undelivered",
                kind=kind,
                error=exc.error,
                attempts=exc.attempts,
                audit_id=audit_id,
                unknown=exc.unknown,
            )
            await self._report(
                kind, target.key, False, exc.attempts, audit_id, exc.error, exc.remaining or text, unknown=exc.unknown
            )
            return False
        except TelegramError as exc:  # pragma: no cover - the courier turns these into DeliveryFailed
            await self._report(kind, target.key, False, 1, audit_id, type(exc).__name__, text)
            return False
        await self._report(kind, target.key, True, attempts, audit_id)
        return True

    async def _report(
        self,
        kind: DeliveryKind,
        chat: str,
        delivered: bool,
        attempts: int,
        audit_id: str | None,
        error: str | None = None,
        text: str | None = None,
        *,
        unknown: bool = False,
    ) -> None:
        report = DeliveryReport(PLATFORM, chat, kind, delivered, attempts, audit_id, error, text, unknown)
        try:
            await self._state.report(report)
        except Exception as exc:
            log.error("telegram.report_failed", kind=kind, delivered=delivered, error=type(exc).__name__)
