"""Who will read a reply in a Telegram group: the privacy-critical part of the connector.

The agent decides what a reply may say from the list of its readers, so this list must never
be shorter than the truth. Telegram will not list a group's members to a bot; what a bot can
learn is who it has seen speak or join, the administrators, a member count, and whether one
given user is (still) a member. So the audience is built to fail closed:

* everyone seen in the chat, every administrator and the sender are named;
* the member count says how many readers there are; each reader we cannot name becomes a
  placeholder identity (``telegram:unknown-<chat>-<n>``), which no contact has, so the agent
  treats it as a stranger;
* only members whose presence is confirmed *for this reply* are subtracted from the count:
  the sender, the bot, the administrators as listed now, and everyone else named after a
  ``getChatMember`` check now. A sighting is never taken as presence: someone who spoke a
  minute ago and left unseen must not stand in for a newcomer nobody saw join (the property
  test in tests/connectors/test_telegram_audience.py found exactly that in an earlier,
  cached version). A member we could not check stays named *and* uncounted;
* when the count is unavailable, one placeholder still marks the audience as not fully known.

What is remembered between replies (who was seen) only decides whom to name and check; it can
add readers, never remove one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog
from telegram import ChatMember, ChatMemberUpdated, Message, User
from telegram.constants import ChatMemberStatus
from telegram.error import TelegramError

from connectors.telegram.config import identity, unknown_identity

log = structlog.get_logger(__name__)

#: at most this many seen members are checked with getChatMember per addressed message (the
#: most recently seen first); the rest stay unconfirmed, which only adds placeholders.
MAX_MEMBER_CHECKS = 50


class ChatDirectory(Protocol):
    """The Bot API questions an audience needs; a PTB ``Bot`` answers them."""

    async def get_chat_administrators(self, chat_id: int) -> Sequence[ChatMember]: ...

    async def get_chat_member(self, chat_id: int, user_id: int) -> ChatMember: ...

    async def get_chat_member_count(self, chat_id: int) -> int: ...


def is_present(member: ChatMember) -> bool:
    """Whether a chat member status means the user is in the chat (and reads it)."""
    if member.status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
        return False
    if member.status == ChatMemberStatus.RESTRICTED:
        return bool(getattr(member, "is_member", False))
    return True


@dataclass(slots=True)
class _Members:
    """Who the bot has seen in one group, with when each was last seen (to check the most
    recent first)."""

    humans: dict[int, float] = field(default_factory=dict)
    bots: dict[int, float] = field(default_factory=dict)

    def see(self, user: User, at: float) -> None:
        (self.bots if user.is_bot else self.humans)[user.id] = at

    def forget(self, user_id: int) -> None:
        self.humans.pop(user_id, None)
        self.bots.pop(user_id, None)

    def most_recent_first(self) -> list[int]:
        seen = {**self.bots, **self.humans}
        return sorted(seen, key=lambda uid: seen[uid], reverse=True)


class GroupRoster:
    """What the bot has seen of each group's members, and the audience of a reply there.

    Kept in memory only: after a restart it is rebuilt from traffic, and until then the
    member count turns everyone not yet seen into placeholders (more strangers, never fewer).
    """

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._groups: dict[int, _Members] = {}

    def members(self, chat_id: int) -> _Members:
        return self._groups.setdefault(chat_id, _Members())

    def forget_chat(self, chat_id: int) -> None:
        self._groups.pop(chat_id, None)

    def see(self, chat_id: int, user: User) -> None:
        """``user`` is in the chat now (pressed a button there, wrote there)."""
        self.members(chat_id).see(user, self._now())

    def track(self, message: Message, bot_id: int) -> None:
        """Learn what any group message (service or not) tells about the chat's members."""
        chat_id = message.chat.id
        now = self._now()
        if message.migrate_to_chat_id is not None:
            members = self._groups.pop(chat_id, None)
            if members is not None:
                self._groups[message.migrate_to_chat_id] = members
            return
        members = self.members(chat_id)
        for user in message.new_chat_members or ():
            members.see(user, now)
        left = message.left_chat_member
        if left is not None:
            if left.id == bot_id:
                self.forget_chat(chat_id)
                return
            members.forget(left.id)
        sender = message.from_user
        if sender is not None and message.sender_chat is None and left is None:
            members.see(sender, now)

    def on_member_update(self, change: ChatMemberUpdated, bot_id: int) -> None:
        """A ``chat_member`` / ``my_chat_member`` update: exact news of one member."""
        member = change.new_chat_member
        present = is_present(member)
        if member.user.id == bot_id:
            if not present:
                self.forget_chat(change.chat.id)
            return
        if present:
            self.members(change.chat.id).see(member.user, self._now())
        else:
            self.members(change.chat.id).forget(member.user.id)

    @staticmethod
    async def _chat_admins(directory: ChatDirectory, chat_id: int) -> tuple[frozenset[int], frozenset[int]]:
        """(people, bots) administering the chat now; empty when Telegram will not say, in
        which case the member count turns them into placeholders."""
        try:
            admins = await directory.get_chat_administrators(chat_id)
        except TelegramError as exc:
            log.warning("telegram.admins_unavailable", error=type(exc).__name__)
            return frozenset(), frozenset()
        return (
            frozenset(a.user.id for a in admins if not a.user.is_bot),
            frozenset(a.user.id for a in admins if a.user.is_bot),
        )

    @staticmethod
    async def _still_member(directory: ChatDirectory, chat_id: int, user_id: int) -> bool | None:
        """Whether a user is in the chat now; None when Telegram will not say."""
        try:
            member = await directory.get_chat_member(chat_id, user_id)
        except TelegramError as exc:
            log.warning("telegram.member_check_failed", error=type(exc).__name__)
            return None
        return is_present(member)

    async def _confirm(self, directory: ChatDirectory, chat_id: int, confirmed: set[int]) -> None:
        """Check the members seen before (most recent first); add those present now to
        ``confirmed`` and forget those who left."""
        members = self.members(chat_id)
        checked = [uid for uid in members.most_recent_first() if uid not in confirmed][:MAX_MEMBER_CHECKS]
        results = await asyncio.gather(*(self._still_member(directory, chat_id, u) for u in checked))
        for user_id, present in zip(checked, results, strict=True):
            if present is False:
                members.forget(user_id)
            elif present:
                confirmed.add(user_id)

    async def audience(self, directory: ChatDirectory, chat_id: int, sender_id: int, bot_id: int) -> tuple[str, ...]:
        """Everyone who may read a reply in this group, the sender first, failing closed
        (see the module doc)."""
        audience, _ = await self.readers(directory, chat_id, sender_id, bot_id)
        return audience

    async def readers(
        self, directory: ChatDirectory, chat_id: int, sender_id: int, bot_id: int
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The reply's audience (see :meth:`audience`) and, from the same look, the humans
        confirmed in the chat now (the sender, the admins, members Telegram said are there): who
        heard the message said, never a member only seen before or a placeholder."""
        admin_humans, admin_bots = await self._chat_admins(directory, chat_id)
        confirmed: set[int] = {bot_id, sender_id, *admin_humans, *admin_bots}
        await self._confirm(directory, chat_id, confirmed)
        members = self.members(chat_id)
        bots = set(members.bots) | set(admin_bots) | {bot_id}
        humans = (set(members.humans) | set(admin_humans) | {sender_id}) - bots
        present = tuple(identity(u) for u in sorted(confirmed - bots))
        audience = [identity(sender_id)]
        audience += [identity(user_id) for user_id in sorted(humans - {sender_id})]
        try:
            count = await directory.get_chat_member_count(chat_id)
        except TelegramError as exc:
            log.warning("telegram.member_count_unavailable", error=type(exc).__name__)
            unknown = 1
        else:
            unknown = count - len(confirmed)
        audience += [unknown_identity(chat_id, n) for n in range(1, unknown + 1)]
        return tuple(audience), present
