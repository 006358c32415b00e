"""Slack identities, chat references and text escaping.

Identities are ``slack:<TEAM>/<USER>``, built from ids in the signed payload, never display
names (anyone can set those). A chat reference (:class:`ChatRef`) is what the agent knows as
``Inbound.chat_id`` and hands back to :meth:`SlackConnector.send` for a held reply: it carries
the channel, the thread the conversation lives in, and whether the delegate speaks there as
the owner, so an approval after a restart answers in the same place with the same voice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

PLATFORM = "slack"
SLACK_ID = re.compile(r"^[A-Za-z0-9]{1,32}$")
_TS = re.compile(r"^\d{1,12}\.\d{1,9}$")
#: the member that stands for "people we could not list": no contact has it, so it is a stranger.
UNKNOWN_MEMBERS = "unknown-members"
_AS_OWNER = "as-owner:"


def identity(team_id: str, user_id: str) -> str:
    """The platform identity the agent keys contacts on."""
    return f"{PLATFORM}:{team_id}/{user_id}"


def team_of_identity(value: str) -> str | None:
    """``slack:T/U`` -> ``T``; None for anything else."""
    team, slash, user = value.removeprefix(f"{PLATFORM}:").partition("/")
    return (
        team if value.startswith(f"{PLATFORM}:") and slash and SLACK_ID.match(team) and SLACK_ID.match(user) else None
    )


def user_of_identity(value: str) -> str | None:
    """``slack:T/U`` or a bare ``U`` -> ``U``; anything else is rejected rather than guessed."""
    user = value.rsplit("/", 1)[-1] if value.startswith(f"{PLATFORM}:") else value
    return user if SLACK_ID.match(user) else None


@dataclass(frozen=True, slots=True)
class ChatRef:
    """A channel, optionally a thread in it, and whether replies there are sent as the owner.

    Written ``[as-owner:]CHANNEL[/THREAD_TS]``: ``D0LEO``, ``C1/1700000000.000200``,
    ``as-owner:D0OWNERLEO``.
    """

    channel: str
    thread_ts: str | None = None
    as_owner: bool = False

    def __str__(self) -> str:
        thread = f"/{self.thread_ts}" if self.thread_ts else ""
        return f"{_AS_OWNER if self.as_owner else ''}{self.channel}{thread}"

    @classmethod
    def parse(cls, value: str) -> ChatRef:
        """The reverse of ``str()``; ValueError for anything that is not one."""
        as_owner = value.startswith(_AS_OWNER)
        rest = value.removeprefix(_AS_OWNER)
        channel, _, thread = rest.partition("/")
        if not SLACK_ID.match(channel) or (thread and not _TS.match(thread)):
            raise ValueError("not a Slack chat reference")
        return cls(channel, thread or None, as_owner)


def escape(text: str) -> str:
    """Escape the three characters Slack treats as markup, so a reply that quotes someone can
    never turn into ``<!channel>`` pings or disguised links."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """Undo Slack's escaping of inbound text (one pass, ``&amp;`` last)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def mentions(text: str) -> set[str]:
    """The user ids ``<@U123>`` / ``<@U123|name>`` mentioned in a raw message text."""
    return set(re.findall(r"<@([A-Za-z0-9]{1,32})(?:\|[^>]*)?>", text))


def strip_mention(text: str, user: str) -> str:
    """The text without mentions of ``user``."""
    return re.sub(rf"<@{re.escape(user)}(?:\|[^>]*)?>", "", text)


def ts_to_time(ts: Any) -> datetime:
    """Slack message ``ts`` ("1700000000.000100") -> aware UTC time; now when absent or odd."""
    try:
        return datetime.fromtimestamp(float(ts), tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return datetime.now(timezone.utc)


def ts_after(a: str, b: str) -> bool:
    """Whether message ``a`` was posted after ``b`` (Slack ts compare as decimals, not text)."""
    try:
        return float(a) > float(b)
    except ValueError:
        return False
