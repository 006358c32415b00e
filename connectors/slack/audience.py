"""Who will read a reply in a Slack channel: the privacy-critical part of the connector.

Every member of a channel reads a threaded reply, so a reply's audience is the sender plus the
channel's *current* members; the agent tells the group only what every one of them may know.
The list must never be shorter than the truth:

* a failure to list the members (or a channel too large to list) adds
  ``slack:<TEAM>/unknown-members``, an identity no contact has, so the agent treats the room as
  holding a stranger;
* member lists are cached to spare the Web API (one ``conversations.members`` per channel,
  not per mention), but only for channels the bot is in, where Slack tells it of every
  ``member_joined_channel`` / ``member_left_channel``; those events drop the entry, so the
  next reply re-reads the list. A message from someone the cached list does not hold drops it
  too (they joined and the event has not arrived yet), and entries expire after ``ttl``;
* a fetch that raced with an invalidation is not cached (a generation counter per channel),
  so a join seen during the fetch can never be overwritten by the older list; replies asking
  at the same time share one fetch, but only within one generation.
* in Slack Connect channels each member's home team is looked up (cached: it never changes);
  one that cannot be looked up adds the stranger placeholder.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from epmem.errors import EpmemError

from connectors.slack.ids import SLACK_ID, UNKNOWN_MEMBERS, identity

log = structlog.get_logger(__name__)

_MEMBERS_PAGE = 200
#: a channel larger than this many pages is treated as "unknown members" rather than listed.
MAX_MEMBER_PAGES = 50


class MemberSource(Protocol):
    """The Web API calls an audience needs; slack-sdk's ``AsyncWebClient`` answers them."""

    async def conversations_members(
        self, *, channel: str, cursor: str | None = None, limit: int | None = None, **kwargs: Any
    ) -> Any: ...

    async def users_info(self, *, user: str, **kwargs: Any) -> Any: ...


class MembersTruncated(EpmemError):
    """The channel has more members than we list; ``members`` holds the ones listed."""

    def __init__(self, members: list[str]) -> None:
        super().__init__(f"member list truncated at {len(members)}")
        self.members = members


@dataclass(frozen=True, slots=True)
class _Entry:
    members: frozenset[str]
    expires: float


class SlackAudience:
    """Channel member lists (cached as the module doc says) and the audience built from them."""

    def __init__(self, ttl_s: float = 300.0, now: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl_s
        self._now = now
        self.bot_user_id: str | None = None
        self._cache: dict[str, _Entry] = {}
        self._generation: dict[str, int] = {}
        self._inflight: dict[tuple[str, int], asyncio.Future[frozenset[str]]] = {}
        self._user_teams: dict[str, str] = {}
        #: Web API member listings made (for tests and the start-up log).
        self.fetches = 0

    # ------------------------------------------------------------------ cache

    def invalidate(self, channel: str) -> None:
        """Membership changed (or may have): the next reply re-reads the list."""
        self._cache.pop(channel, None)
        self._generation[channel] = self._generation.get(channel, 0) + 1

    def saw(self, channel: str, user: str) -> None:
        """``user`` wrote in ``channel``: if the cached list lacks them, it is out of date."""
        entry = self._cache.get(channel)
        if entry is not None and user not in entry.members and user != self.bot_user_id:
            log.info("slack.members_stale", channel=channel)
            self.invalidate(channel)

    async def members(self, source: MemberSource, channel: str) -> frozenset[str]:
        """The channel's member user ids, from the cache when it can be trusted."""
        entry = self._cache.get(channel)
        if entry is not None and entry.expires > self._now():
            return entry.members
        key = (channel, self._generation.get(channel, 0))
        shared = self._inflight.get(key)
        if shared is not None:
            return await asyncio.shield(shared)
        future: asyncio.Future[frozenset[str]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            members = frozenset(await self._fetch(source, channel))
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: waiters (if any) re-raise it themselves
            raise
        else:
            future.set_result(members)
        finally:
            self._inflight.pop(key, None)
        # only channels the bot is in send us membership events; only those are cached
        if self.bot_user_id in members and self._generation.get(channel, 0) == key[1]:
            self._cache[channel] = _Entry(members, self._now() + self.ttl)
        return members

    async def _fetch(self, source: MemberSource, channel: str) -> list[str]:
        self.fetches += 1
        members: list[str] = []
        cursor: str | None = None
        for _page in range(MAX_MEMBER_PAGES):
            resp = await source.conversations_members(channel=channel, limit=_MEMBERS_PAGE, cursor=cursor)
            members.extend(str(m) for m in resp.get("members") or [])
            cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
            if cursor is None:
                return members
        raise MembersTruncated(members)

    # ------------------------------------------------------------------ audience

    async def audience(
        self, source: MemberSource, channel: str, team: str, sender: str, shared: bool
    ) -> tuple[str, ...]:
        """Everyone who will read a reply in ``channel``, the sender first; fails closed to the
        stranger placeholder (see the module doc). ``source`` is the client allowed to list
        the channel (the bot's, or the owner's when the delegate answers a mention)."""
        placeholder = identity(team, UNKNOWN_MEMBERS)
        try:
            members = sorted(await self.members(source, channel))
        except MembersTruncated as exc:
            log.warning("slack.members_truncated", channel=channel, listed=len(exc.members))
            return _with_sender(sender, [*self._member_ids(exc.members, team), placeholder])
        except Exception as exc:
            log.warning("slack.members_failed", channel=channel, error=type(exc).__name__)
            return (sender, placeholder)
        if not shared:
            return _with_sender(sender, self._member_ids(members, team))
        audience: list[str] = []
        failed = False
        for member in members:
            if member == self.bot_user_id or not SLACK_ID.match(member):
                continue
            try:
                audience.append(identity(await self._team_of(source, member, team), member))
            except Exception as exc:
                log.warning("slack.member_team_failed", channel=channel, error=type(exc).__name__)
                failed = True
        if failed:
            audience.append(placeholder)
        return _with_sender(sender, audience)

    async def _team_of(self, source: MemberSource, user: str, default_team: str) -> str:
        """A member's home workspace (Slack Connect); cached, since it never changes."""
        if user not in self._user_teams:
            info = await source.users_info(user=user)
            member = info.get("user") or {}
            self._user_teams[user] = str(member.get("team_id") or default_team)
        return self._user_teams[user]

    def _member_ids(self, members: list[str], team: str) -> list[str]:
        """Member user ids -> identities, leaving out this bot (it is the speaker, not a reader)."""
        return [identity(team, m) for m in members if m != self.bot_user_id and SLACK_ID.match(m)]


def _with_sender(sender: str, audience: list[str]) -> tuple[str, ...]:
    """The sender is always a reader, even if the member list lags behind."""
    return tuple(dict.fromkeys([sender, *audience]))
