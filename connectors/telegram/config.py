"""The Telegram connector's settings and identities.

Identities are always ``telegram:<numeric user id>``: usernames and display names can be
changed by their holder at will, so they never decide anything (display names travel only in
``Inbound.sender_display_name``, for wording).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from connectors.courier import Rate, RetryPolicy, Timer

PLATFORM = "telegram"


@dataclass(frozen=True, slots=True)
class TelegramPacing:
    """Telegram's documented send limits (Bot API FAQ): about one message per second in a
    chat, at most 20 per minute in a group, about 30 per second over all chats."""

    chat: Rate = Rate(1, 1.0)
    group: Rate = Rate(20, 60.0)
    overall: Rate = Rate(30, 1.0)


@dataclass(frozen=True, slots=True)
class TelegramConfig:
    """Everything the connector needs, passed explicitly (no environment reads here).

    ``owner_user_id`` is the owner's numeric Telegram id: ``Outbound.to_owner`` goes to that
    private chat, and Business connections are honoured only when made by that user (a
    stranger connecting the bot to their own Business account must not get the owner's
    delegate answering in their chats).  ``poll_timeout``/``poll_interval`` tune long
    polling (tests use 1 s / 0). ``pacing``, ``retry`` and ``timer`` shape the delivery path (tests pass a fake timer);
    ``send_timeout_s`` is how long a Bot API call may take to answer (a ``sendMessage`` that
    times out is not retried: it may have been posted). ``fed``: the bot is shared by several
    owners and a front polls it, handing this connector its owner's updates.
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
    send_timeout_s: float = 10.0
    pacing: TelegramPacing = field(default_factory=TelegramPacing)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timer: Timer = field(default_factory=Timer)
    fed: bool = False
    #: the owner's command menu, set for the owner's private chat only (connectors/telegram/menu.py).
    owner_commands: tuple[tuple[str, str], ...] = ()


def identity(user_id: int) -> str:
    """The platform identity of a Telegram user: numeric id only, never a name."""
    return f"{PLATFORM}:{user_id}"


def unknown_identity(chat_id: int, n: int) -> str:
    """A stand-in for the n-th group member the bot cannot name (a stranger to the agent)."""
    return f"{PLATFORM}:unknown-{chat_id}-{n}"


def chat_key(chat_id: int, business_connection_id: str | None = None) -> str:
    """The ``Inbound.chat_id`` of a chat: the numeric id, plus ``@<connection>`` when the chat
    is one of the owner's Business chats. The route travels with the id, so a reply held for
    approval and sent after a restart still goes out through the connection it came from
    (as the owner), not from the bot."""
    return f"{chat_id}@{business_connection_id}" if business_connection_id else str(chat_id)


def parse_chat_key(key: str) -> tuple[int, str | None]:
    """``"42"`` -> (42, None); ``"42@conn"`` -> (42, "conn"); ValueError for anything else."""
    chat, _, connection = key.partition("@")
    return int(chat), connection or None
