"""Whether the bot posted a message: asked of the conversation's history with the bot's token.

A reply the bot was sending when its process died has no outcome: Slack may have posted it or
not. Slack can say: the conversation's history since the reply was decided either holds the
bot's post of it or does not. Only a clear answer counts; anything else (a conversation sent as
the owner, a history the bot may not read, more messages than one page) is "cannot tell", and
then the host keeps the reply for the owner instead of guessing (bot/inflight.py).
"""

from __future__ import annotations

import html
from datetime import datetime

import structlog
from slack_sdk.web.async_client import AsyncWebClient

from connectors.slack.ids import ChatRef

log = structlog.get_logger(__name__)

_PAGE = 200
#: the words compared: a long reply may have gone out in several posts, the first starts it.
_HEAD = 100


def _head(text: str) -> str:
    return " ".join(html.unescape(text).split())[:_HEAD]


async def posted(
    client: AsyncWebClient, bot_user_id: str | None, chat_id: str, text: str, since: datetime
) -> bool | None:
    """True: the bot posted ``text`` to ``chat_id`` after ``since``; False: it did not; None:
    cannot tell."""
    try:
        ref = ChatRef.parse(chat_id)
    except ValueError:
        return None
    if ref.as_owner or bot_user_id is None or not text.strip():
        return None
    oldest = f"{since.timestamp() - 1:.6f}"
    try:
        if ref.thread_ts:
            resp = await client.conversations_replies(channel=ref.channel, ts=ref.thread_ts, oldest=oldest, limit=_PAGE)
        else:
            resp = await client.conversations_history(channel=ref.channel, oldest=oldest, limit=_PAGE)
    except Exception as exc:
        log.warning("slack.history_unreadable", error=type(exc).__name__)
        return None
    if resp.get("has_more"):
        return None
    want = _head(text)
    return any(
        m.get("user") == bot_user_id and _head(str(m.get("text") or "")) == want for m in resp.get("messages") or []
    )
