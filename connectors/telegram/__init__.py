"""The Telegram connector: python-telegram-bot in, the agent's :class:`~connectors.base.Inbound`
out, and back. Modules: ``app`` (lifecycle and update handlers), ``audience`` (who reads a
group reply: privacy-critical), ``delivery`` (paced, retried sends), ``business`` (the owner's
Business connections), ``buttons``, ``text`` and ``config``."""

from connectors.telegram.app import ALLOWED_UPDATES, RedactToken, TelegramConnector
from connectors.telegram.audience import ChatDirectory, GroupRoster
from connectors.telegram.buttons import CALLBACK_DATA_MAX_BYTES
from connectors.telegram.config import (
    PLATFORM,
    TelegramConfig,
    TelegramPacing,
    chat_key,
    identity,
    parse_chat_key,
    unknown_identity,
)
from connectors.telegram.text import MESSAGE_MAX_UTF16, attachment_kind, chunk_text

__all__ = [
    "ALLOWED_UPDATES",
    "CALLBACK_DATA_MAX_BYTES",
    "MESSAGE_MAX_UTF16",
    "PLATFORM",
    "ChatDirectory",
    "GroupRoster",
    "RedactToken",
    "TelegramConfig",
    "TelegramConnector",
    "TelegramPacing",
    "attachment_kind",
    "chat_key",
    "chunk_text",
    "identity",
    "parse_chat_key",
    "unknown_identity",
]
