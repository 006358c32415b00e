"""Who reads a Telegram group reply, tested directly on :class:`GroupRoster`.

Two kinds of peer: the real PTB ``Bot`` against the loopback Bot API (what the connector uses),
and, for the property test, a small in-memory Telegram (``Chat``) that knows the truth about a
group's members and answers the three Bot API questions the roster asks. The property: whatever
the roster has seen or missed, and whichever Bot API calls fail, every real member is either
named in the audience or the audience holds a stranger placeholder; with the member count
known, there are at least as many placeholders as unnamed members.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from telegram import (
    Bot,
    Chat,
    ChatMember,
    ChatMemberLeft,
    ChatMemberMember,
    ChatMemberOwner,
    ChatMemberUpdated,
    Message,
    User,
)
from telegram.error import BadRequest
from telegram.request import HTTPXRequest

from connectors.telegram import GroupRoster
from testkit.fake_telegram import FakeTelegram

GROUP = -1001
BOT_ID = 123456
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def user(uid: int, *, bot: bool = False) -> User:
    return User(uid, f"U{uid}", is_bot=bot)


def message(sender: int, **fields: object) -> Message:
    return Message(1, EPOCH, Chat(GROUP, Chat.SUPERGROUP), from_user=user(sender), **fields)  # type: ignore[arg-type]


def names(audience: Sequence[str]) -> tuple[list[int], int]:
    """(named user ids, placeholder count) of an audience."""
    named = [int(a.split(":")[1]) for a in audience if "unknown" not in a]
    return named, sum("unknown" in a for a in audience)


@pytest_asyncio.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:  # noqa: F811
    request = HTTPXRequest(httpx_kwargs={"trust_env": False})
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url, request=request) as b:
        yield b


# -- against the Bot API (real PTB) -------------------------------------------------------------


async def test_sender_seen_members_and_admins_are_named_bots_are_not(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    tg = fake_telegram
    tg.admins[GROUP] = [FakeTelegram.user(7, "Admin"), FakeTelegram.user(99, "Helper", is_bot=True)]
    for uid in (3, 4, 5):
        tg.add_member(GROUP, FakeTelegram.user(uid, f"U{uid}"))
    tg.add_member(GROUP, FakeTelegram.user(98, "Other bot", is_bot=True))
    roster = GroupRoster()
    roster.track(message(3), BOT_ID)
    roster.track(message(4, new_chat_members=(user(5), user(98, bot=True))), BOT_ID)
    tg.member_counts[GROUP] = 7  # bot, 3, 4, 5, 7, 98, 99: everyone known
    audience = await roster.audience(bot, GROUP, 4, BOT_ID)
    assert audience == ("telegram:4", "telegram:3", "telegram:5", "telegram:7")


async def test_members_nobody_has_seen_become_placeholders(bot: Bot, fake_telegram: FakeTelegram) -> None:  # noqa: F811
    fake_telegram.member_counts[GROUP] = 5  # sender and bot known, three unseen
    audience = await GroupRoster().audience(bot, GROUP, 4, BOT_ID)
    assert audience == ("telegram:4", *(f"telegram:unknown-{GROUP}-{n}" for n in (1, 2, 3)))


async def test_unavailable_count_and_admins_still_mark_the_room_unknown(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.errors["getChatMemberCount"] = (400, "Bad Request: chat not found")
    fake_telegram.errors["getChatAdministrators"] = (400, "Bad Request: chat not found")
    audience = await GroupRoster().audience(bot, GROUP, 4, BOT_ID)
    assert audience == ("telegram:4", f"telegram:unknown-{GROUP}-1")


async def test_a_member_gone_unseen_is_rechecked_and_cannot_hide_a_newcomer(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    roster = GroupRoster()
    roster.track(message(3), BOT_ID)  # Carol spoke a moment ago; the fake does not list her: she left since
    fake_telegram.member_counts[GROUP] = 3  # sender, bot, and a newcomer nobody saw
    audience = await roster.audience(bot, GROUP, 4, BOT_ID)
    assert audience == ("telegram:4", f"telegram:unknown-{GROUP}-1")
    assert [p for m, p in fake_telegram.calls if m == "getChatMember"] == [{"chat_id": GROUP, "user_id": 3}]


async def test_member_updates_and_migration_keep_the_roster(bot: Bot, fake_telegram: FakeTelegram) -> None:  # noqa: F811
    roster = GroupRoster()
    roster.track(message(3), BOT_ID)
    roster.track(message(5), BOT_ID)
    left = ChatMemberUpdated(
        Chat(GROUP, Chat.SUPERGROUP), user(1), EPOCH, ChatMemberMember(user(5)), ChatMemberLeft(user(5))
    )
    roster.on_member_update(left, BOT_ID)
    roster.track(message(3, migrate_to_chat_id=-2002), BOT_ID)
    fake_telegram.add_member(-2002, FakeTelegram.user(3, "Carol"))
    fake_telegram.member_counts[-2002] = 3
    assert await roster.audience(bot, -2002, 4, BOT_ID) == ("telegram:4", "telegram:3")


# -- the invariant, against an in-memory Telegram ----------------------------------------------


@dataclass
class Room:
    """The truth about one group, answering as the Bot API would (or failing when told)."""

    humans: set[int]
    admins: set[int]
    failing: set[str] = field(default_factory=set)

    def _check(self, method: str) -> None:
        if method in self.failing:
            raise BadRequest("Bad Request: not now")

    async def get_chat_administrators(self, chat_id: int) -> Sequence[ChatMember]:
        self._check("admins")
        return [ChatMemberOwner(user(uid), is_anonymous=False) for uid in sorted(self.admins)]

    async def get_chat_member(self, chat_id: int, user_id: int) -> ChatMember:
        self._check("member")
        return ChatMemberMember(user(user_id)) if user_id in self.humans else ChatMemberLeft(user(user_id))

    async def get_chat_member_count(self, chat_id: int) -> int:
        self._check("count")
        return len(self.humans) + 1  # and the bot


people = st.sets(st.integers(1, 12), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    members=people,
    seen=st.lists(st.integers(1, 12), max_size=20),
    admins=st.sets(st.integers(1, 12), max_size=3),
    failing=st.sets(st.sampled_from(["admins", "member", "count"])),
    data=st.data(),
)
async def test_no_member_is_ever_hidden(
    members: set[int], seen: list[int], admins: set[int], failing: set[str], data: st.DataObject
) -> None:
    roster = GroupRoster()
    for uid in seen:  # people seen at some time (some left since, unseen)
        roster.see(GROUP, user(uid))
    sender = data.draw(st.sampled_from(sorted(members)))
    room = Room(members, admins & members, failing)
    audience = await roster.audience(room, GROUP, sender, BOT_ID)
    named, placeholders = names(audience)
    assert audience[0] == f"telegram:{sender}"
    unnamed = members - set(named)
    if unnamed:
        assert placeholders >= 1
    if "count" not in failing:
        assert placeholders >= len(unnamed)
