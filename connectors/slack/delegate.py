"""Delegate mode: answering as the owner, never over the owner.

With the owner's user token the app receives the messages others send the owner (and, in
channels, every message the owner can read). The delegate may answer those as the owner, but
the owner comes first: whenever the owner has written in that conversation after the message
(typed an answer, or simply took over the thread), the delegate stays silent for it. Two
sources say whether that happened: the owner's own message events, seen as they arrive, and,
right before answering, the conversation's history read with the owner's token (an event may
lag behind). Our own posts as the owner are remembered, so they are never mistaken for the
owner speaking.

Threads the bot answered in are followed the same way: a follow-up there, without a new
mention, is answered in the thread, until the owner writes in it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass

import structlog
from slack_sdk.web.async_client import AsyncWebClient

from connectors.base import PlatformState
from connectors.slack.ids import PLATFORM, ChatRef, ts_after

log = structlog.get_logger(__name__)

_PER_CHANNEL = 64
_HISTORY_LIMIT = 100


@dataclass(frozen=True, slots=True)
class _Spoke:
    ts: str
    thread: str | None


class OwnerWatch:
    """When the owner last wrote, per channel (see the module doc)."""

    def __init__(self, owner_user: str | None, own_posts: Collection[str]) -> None:
        self.owner_user = owner_user
        self._own_posts = own_posts
        self._spoke: dict[str, deque[_Spoke]] = {}

    def is_owner(self, user: object) -> bool:
        return self.owner_user is not None and user == self.owner_user

    def is_own_post(self, ts: object) -> bool:
        return isinstance(ts, str) and ts in self._own_posts

    def spoke(self, channel: str, ts: str, thread: str | None) -> None:
        """The owner wrote ``ts`` in ``channel`` (in ``thread``, or top level)."""
        if self.is_own_post(ts):
            return
        self._spoke.setdefault(channel, deque(maxlen=_PER_CHANNEL)).append(_Spoke(ts, thread))

    def answered(self, ref: ChatRef, after: str, *, anywhere: bool) -> bool:
        """Whether the owner wrote after ``after`` in this conversation, from events seen.
        ``anywhere``: any message in the channel counts (a DM); else the same thread, or the
        top level when ``ref`` has no thread."""
        for spoke in self._spoke.get(ref.channel, ()):
            if ts_after(spoke.ts, after) and (anywhere or spoke.thread == ref.thread_ts):
                return True
        return False

    async def answered_in_history(self, client: AsyncWebClient, ref: ChatRef, after: str) -> bool:
        """The same question asked of Slack with the owner's token. An error answers False:
        then the events seen decide (a lost answer would be worse than answering once more)."""
        try:
            if ref.thread_ts:
                resp = await client.conversations_replies(
                    channel=ref.channel, ts=ref.thread_ts, oldest=after, inclusive=False, limit=_HISTORY_LIMIT
                )
            else:
                resp = await client.conversations_history(
                    channel=ref.channel, oldest=after, inclusive=False, limit=_HISTORY_LIMIT
                )
        except Exception as exc:
            log.warning("slack.delegate_history_failed", error=type(exc).__name__)
            return False
        for message in resp.get("messages") or []:
            ts = str(message.get("ts") or "")
            if (
                self.is_owner(message.get("user"))
                and not message.get("bot_id")
                and ts_after(ts, after)
                and not self.is_own_post(ts)
            ):
                return True
        return False


class FollowedThreads:
    """Threads the bot answered in, kept in the host's state so a restart keeps following."""

    def __init__(self, state: PlatformState, days: float, now: Callable[[], float] = time.time) -> None:
        self._state = state
        self._seconds = days * 86400
        self._now = now
        self._known: dict[str, bool] = {}

    @staticmethod
    def _key(channel: str, thread: str) -> str:
        return f"thread:{channel}/{thread}"

    async def follow(self, channel: str, thread: str) -> None:
        key = self._key(channel, thread)
        self._known[key] = True
        await self._state.save_route(PLATFORM, key, {"since": self._now()})

    async def drop(self, channel: str, thread: str) -> None:
        key = self._key(channel, thread)
        if self._known.get(key) is False:
            return
        self._known[key] = False
        await self._state.save_route(PLATFORM, key, None)

    async def followed(self, channel: str, thread: str) -> bool:
        key = self._key(channel, thread)
        known = self._known.get(key)
        if known is not None:
            return known
        route = await self._state.route(PLATFORM, key)
        since = route.get("since") if route else None
        followed = isinstance(since, (int, float)) and self._now() - since < self._seconds
        if len(self._known) > 10_000:
            self._known.clear()
        self._known[key] = followed
        return followed
