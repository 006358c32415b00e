"""The whole bot on Telegram: PTB long-polls a loopback Bot API, the real agent answers.

``epmem run``'s :class:`~bot.serve.Service` is started exactly as in production (from the
environment), over a real runtime holding the house-and-bonus example with Telegram ids, and
the fake Bot API records what the bot sent. Negative checks ("no answer") rest on PTB handling
updates in order: once a later update is answered, every earlier one has been handled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.agent import NON_TEXT_NOTE
from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from epmem.reply.respond import deflection
from testkit.fake_telegram import FakeTelegram
from testkit.house import COVER, HOUSE_Q, OWNER_NAME, OWNER_TG, ROOM_Q, TG, TRUTH, house_runtime

GROUP = -100555
OWNER = FakeTelegram.user(OWNER_TG, "Maya")
LEO = FakeTelegram.user(TG["leo"], "Leo")
RAJ = FakeTelegram.user(TG["raj"], "Raj")
GRACE = FakeTelegram.user(TG["grace"], "Grace")
STRANGER = FakeTelegram.user(4242, "Maya Chen")  # a display name proves nothing
MONEY_Q = "Did Maya get any money from work recently?"


@dataclass
class Bot:
    tg: FakeTelegram
    runtime: Runtime
    service: Service

    async def said_to(self, chat_id: int, n: int = 1) -> list[str]:
        """Wait for at least ``n`` messages sent to ``chat_id``; their texts."""
        await self.tg.wait_for(lambda: len(self._to(chat_id)) >= n)
        return [s["text"] for s in self._to(chat_id)]

    def _to(self, chat_id: int) -> list[dict[str, Any]]:
        return [s for s in self.tg.sent if s["chat_id"] == chat_id]


@pytest_asyncio.fixture
async def bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    async with FakeTelegram() as tg:
        for name, value in tg.service_env().items():
            monkeypatch.setenv(name, value)
        runtime = await house_runtime(tmp_path / "data")
        service = Service(runtime, PlatformSettings())
        try:
            assert service.platforms == ["telegram"]
            await service.start()
            yield Bot(tg, runtime, service)
        finally:
            await service.stop()
            await runtime.close()


async def test_stranger_is_deflected_and_a_close_contact_hears_the_truth(bot: Bot) -> None:
    bot.tg.private_text(STRANGER, MONEY_Q)
    assert await bot.said_to(4242) == [deflection(OWNER_NAME)]
    bot.tg.private_text(LEO, HOUSE_Q)
    [reply] = await bot.said_to(TG["leo"])
    assert TRUTH in reply
    bot.tg.private_text(RAJ, HOUSE_Q)
    [cover] = await bot.said_to(TG["raj"])
    assert COVER in cover and TRUTH not in cover
    records = await bot.runtime.audit.records(kind="reply")
    assert [(r.body["sender"], r.body["disclosed"]) for r in records] == [
        ("telegram:4242", []),
        (f"telegram:{TG['leo']}", ["f1"]),
        (f"telegram:{TG['raj']}", ["f2"]),
    ]


async def test_group_with_a_low_level_member_hears_only_what_all_may_know(bot: Bot) -> None:
    bot.tg.group_message(GROUP, RAJ, "hi all")  # Raj is seen in the group
    bot.tg.group_message(GROUP, LEO, HOUSE_Q, mention=True)
    [reply] = await bot.said_to(GROUP)
    assert COVER in reply and TRUTH not in reply
    [record] = await bot.runtime.audit.records(kind="reply")
    assert record.body["chat_kind"] == "group" and record.body["audience"] == ["leo", "raj"]
    # family only (Grace is level 1 too): the truth
    bot.tg.group_message(GROUP - 1, GRACE, "morning")
    bot.tg.group_message(GROUP - 1, LEO, HOUSE_Q, mention=True)
    [family] = await bot.said_to(GROUP - 1)
    assert TRUTH in family


async def test_a_member_nobody_has_seen_counts_as_a_stranger(bot: Bot) -> None:
    bot.tg.member_counts[GROUP] = 3  # Leo, the bot, and someone who never spoke
    bot.tg.group_message(GROUP, LEO, HOUSE_Q, mention=True)
    [reply] = await bot.said_to(GROUP)
    assert TRUTH not in reply
    [record] = await bot.runtime.audit.records(kind="reply")
    assert record.body["audience"] == ["leo", f"stranger(telegram:unknown-{GROUP}-1)"]


async def test_business_message_is_answered_through_the_connection_and_honours_pause(bot: Bot) -> None:
    bot.tg.business_connection("bc-1", OWNER)
    bot.tg.business_message("bc-1", LEO, HOUSE_Q)
    await bot.tg.wait_for_sent(1)
    [sent] = bot.tg.sent
    assert sent["business_connection_id"] == "bc-1" and sent["chat_id"] == TG["leo"]
    assert TRUTH in sent["text"]
    bot.tg.business_message("bc-1", LEO, "thanks!", sender=OWNER)  # the owner typing: not ours
    bot.tg.private_text(OWNER, "/pause")
    assert (await bot.said_to(OWNER_TG))[0].startswith("Paused")
    bot.tg.business_message("bc-1", LEO, HOUSE_Q)
    bot.tg.private_text(OWNER, "/resume")
    assert len(await bot.said_to(OWNER_TG, 2)) == 2
    assert len(bot._to(TG["leo"])) == 1  # neither the owner's line nor the paused one answered
    assert [r.body["sender"] for r in await bot.runtime.audit.records(kind="paused")] == [f"telegram:{TG['leo']}"]


async def test_a_press_in_a_business_chat_bypasses_no_silence_and_speaks_not_as_the_owner(bot: Bot) -> None:
    """Issue 38: with the owner's Business chats silent, a contact's press on a message there,
    carrying an owner command or a question, is answered by nobody: nothing is sent through the
    connection, nothing is decided or audited as a reply, no consultation opens."""
    bot.tg.business_connection("bc-1", OWNER)
    bot.tg.private_text(OWNER, "/delegate silent")
    assert (await bot.said_to(OWNER_TG))[0].startswith("Replies sent as you: silent")
    asked = bot.tg.business_message("bc-1", LEO, HOUSE_Q)["business_message"]
    bot.tg.callback_query(LEO, asked, "/approve 0123abcd")
    bot.tg.callback_query(LEO, asked, HOUSE_Q)
    bot.tg.private_text(OWNER, "/delegate")
    await bot.said_to(OWNER_TG, 2)
    assert [s for s in bot.tg.sent if s.get("business_connection_id") or s["chat_id"] == TG["leo"]] == []
    records = await bot.runtime.audit.records(contact="leo")
    assert [r.kind for r in records] == ["delegate_silent"], [r.kind for r in records]
    service = bot.runtime.owner.consultations
    assert service is None or await service.store.pending() == []


async def test_owner_allow_changes_the_next_answer_and_is_audited(bot: Bot) -> None:
    bot.tg.private_text(OWNER, "/allow f1 to raj for 7d")
    [ack] = await bot.said_to(OWNER_TG)
    assert ack.startswith("Exception 1: allow raj on fact f1 until ")
    bot.tg.private_text(RAJ, HOUSE_Q)
    [reply] = await bot.said_to(TG["raj"])
    assert TRUTH in reply
    [change] = await bot.runtime.audit.records(kind="policy_change")
    assert change.body["by"] == f"telegram:{OWNER_TG}" and change.body["target"] == "fact:f1"
    # the scheduler armed the expiry at once
    assert bot.service.scheduler.aps is not None and bot.service.scheduler.aps.get_job("exception:1")


async def test_after_the_owner_allows_the_truth_the_question_its_cover_answered_gets_the_truth(bot: Bot) -> None:
    bot.tg.private_text(RAJ, ROOM_Q)
    [cover] = await bot.said_to(TG["raj"])
    assert COVER in cover and TRUTH not in cover
    bot.tg.private_text(OWNER, "/allow f1 to raj")
    await bot.said_to(OWNER_TG)
    bot.tg.private_text(RAJ, ROOM_Q)
    [_, truth] = await bot.said_to(TG["raj"], 2)
    assert TRUTH in truth


async def test_non_owner_allow_changes_nothing(bot: Bot) -> None:
    bot.tg.private_text(RAJ, "/allow f1 to raj")
    bot.tg.private_text(RAJ, HOUSE_Q)
    replies = await bot.said_to(TG["raj"], 2)
    assert replies[0] == deflection(OWNER_NAME)
    assert TRUTH not in replies[1]
    assert await bot.runtime.overlay.exceptions() == []
    assert [r.kind for r in await bot.runtime.audit.records(contact="raj")] == ["attempted_command", "reply"]


async def test_held_reply_is_approved_with_an_inline_button(bot: Bot) -> None:
    bot.tg.private_text(OWNER, "/approval 2")
    await bot.said_to(OWNER_TG)
    bot.tg.private_text(LEO, HOUSE_Q)
    notes = await bot.said_to(OWNER_TG, 2)
    assert notes[1].startswith("Held reply ") and TRUTH in notes[1]
    note_message = next(m for m in bot.tg.sent_messages if m["text"] == notes[1])
    [row] = note_message["reply_markup"]["inline_keyboard"]
    assert [b["text"] for b in row] == ["Approve", "Edit", "Reject"]
    bot.tg.callback_query(OWNER, note_message, row[0]["callback_data"])
    [delivered] = await bot.said_to(TG["leo"])
    assert TRUTH in delivered
    assert (await bot.said_to(OWNER_TG, 3))[2].startswith("Sent held reply")
    assert [(d.fact_id, d.recipient) for d in await bot.runtime.audit.who_knows("f1")] == [("f1", "leo")]


async def test_stickers_photos_edits_and_service_messages_are_audited(bot: Bot) -> None:
    bot.tg.sticker(LEO)
    bot.tg.photo(LEO, caption="look")
    bot.tg.edited_message(LEO, "changed", message_id=7)  # silence: the original was answered
    bot.tg.private_text(
        LEO, "", pinned_message={"message_id": 5, "date": 0, "chat": {"id": TG["leo"], "type": "private"}}
    )
    bot.tg.private_text(LEO, HOUSE_Q)
    replies = await bot.said_to(TG["leo"], 3)
    assert replies[:2] == [NON_TEXT_NOTE] * 2 and TRUTH in replies[2]
    kinds = [r.body["non_text"] for r in await bot.runtime.audit.records(kind="non_text")]
    assert kinds == ["sticker", "photo", "edited", "service"]
