"""The Telegram connector end to end: PTB really long-polls a loopback Bot API server.

Nothing of PTB or of the connector is mocked; the handler is a small recorder that echoes
what the connector told it (chat kind, sender, audience, text), so each assertion reads
what the agent would have seen and what Telegram would have received.

"Not answered" is proved without sleeping: PTB handles updates one at a time, in order, so
once a later update's reply arrives every earlier update has been fully handled.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from connectors.base import Action, Connector, Inbound, KnowsReaders, Outbound
from connectors.telegram import (
    CALLBACK_DATA_MAX_BYTES,
    RedactToken,
    TelegramConfig,
    TelegramConnector,
    chunk_text,
)
from testkit.clock import FakeTimer
from testkit.fake_telegram import FakeTelegram
from testkit.state import OpenState, connector_state

OWNER_ID = 777
GROUP_ID = -1001234

ALICE = FakeTelegram.user(42, "Alice", username="alice")
BOB = FakeTelegram.user(43, "Bob")
CAROL = FakeTelegram.user(44, "Carol")
DAVE = FakeTelegram.user(45, "Dave")
ERIN = FakeTelegram.user(46, "Erin")
OWNER = FakeTelegram.user(OWNER_ID, "Owner")
OTHER_BOT = FakeTelegram.user(999, "Helper", is_bot=True, username="helper_bot")

Responder = Callable[[Inbound], Outbound]


def echo(inbound: Inbound) -> Outbound:
    """Say back what the connector produced, so the sent text shows it too."""
    return Outbound(text=f"{inbound.chat_kind}|{inbound.sender}|{','.join(inbound.audience)}|{inbound.text}")


class Recorder:
    """The test's agent: records every Inbound and answers with ``respond`` (echo by
    default; a test may swap in a responder that raises or stays silent)."""

    def __init__(self) -> None:
        self.inbounds: list[Inbound] = []
        self.respond: Responder = echo
        self._changed = asyncio.Condition()

    async def __call__(self, inbound: Inbound) -> Outbound:
        self.inbounds.append(inbound)
        async with self._changed:
            self._changed.notify_all()
        return self.respond(inbound)

    async def wait_for(self, n: int, timeout: float = 5.0) -> list[Inbound]:
        async with self._changed:
            done = self._changed.wait_for(lambda: len(self.inbounds) >= n)
            await asyncio.wait_for(done, timeout)
        return list(self.inbounds)


def make_config(fake: FakeTelegram, **overrides: Any) -> TelegramConfig:
    """Pacing runs on a fake clock: replies to one chat are spaced in virtual time, not real."""
    settings: dict[str, Any] = {
        "token": fake.token,
        "base_url": fake.base_url,
        "owner_user_id": OWNER_ID,
        "poll_timeout": 1,
        "poll_interval": 0,
        "timer": FakeTimer().timer,
    }
    settings.update(overrides)
    return TelegramConfig(**settings)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest_asyncio.fixture
async def st(tmp_path: Path) -> AsyncIterator[OpenState]:
    """The connector's state (Business connections, undelivered replies) on real SQLite."""
    async with connector_state(tmp_path) as opened:
        yield opened


@pytest_asyncio.fixture
async def connector(
    fake_telegram: FakeTelegram,  # noqa: F811
    recorder: Recorder,
    st: OpenState,
) -> AsyncIterator[TelegramConnector]:
    conn = TelegramConnector(make_config(fake_telegram), recorder, state=st.state)
    await conn.start()
    try:
        yield conn
    finally:
        await conn.stop()


@pytest.fixture
def tg(fake_telegram: FakeTelegram, connector: TelegramConnector) -> FakeTelegram:  # noqa: F811
    """The fake server, with a running connector polling it."""
    return fake_telegram


# -- private chats ------------------------------------------------------------------------------


async def test_private_message_identity_audience_and_reply(tg: FakeTelegram, recorder: Recorder) -> None:
    update = tg.private_text(ALICE, "hello there")
    sent = await tg.wait_for_sent(1)

    [inbound] = recorder.inbounds
    assert inbound.platform == "telegram"
    assert inbound.chat_kind == "direct"
    assert inbound.chat_id == "42"
    assert inbound.sender == "telegram:42"
    assert inbound.audience == ("telegram:42",)
    assert inbound.text == "hello there"
    assert inbound.non_text is None
    assert inbound.message_id == str(update["message"]["message_id"])
    assert inbound.sender_display_name == "Alice"  # display name only here, never an identity
    assert sent[0]["chat_id"] == 42
    assert sent[0]["text"] == "direct|telegram:42|telegram:42|hello there"
    assert "reply_parameters" not in sent[0]


async def test_connector_satisfies_protocol(connector: TelegramConnector) -> None:
    conn: Connector = connector
    assert conn.platform == "telegram"
    assert connector.running


async def test_commands_arrive_as_text(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.private_text(ALICE, "/allow bob", entities=[{"type": "bot_command", "offset": 0, "length": 6}])
    command = f"/allow@{tg.bot_username}"
    tg.group_message(
        GROUP_ID,
        OWNER,
        f"{command} carol",
        entities=[{"type": "bot_command", "offset": 0, "length": len(command)}],
    )
    await tg.wait_for_sent(2)
    assert [i.text for i in recorder.inbounds] == ["/allow bob", "/allow carol"]
    assert recorder.inbounds[1].sender == f"telegram:{OWNER_ID}"


async def test_huge_text_is_truncated_and_flagged(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.private_text(ALICE, "x" * 5000)
    await tg.wait_for_sent(1)
    [inbound] = recorder.inbounds
    assert inbound.text == "x" * 4000
    assert inbound.non_text == "too_long"


async def test_non_text_and_edits_are_forwarded_flagged(tg: FakeTelegram, recorder: Recorder) -> None:
    recorder.respond = lambda inbound: Outbound(text=f"got {inbound.non_text}")
    tg.sticker(ALICE)
    tg.photo(ALICE, caption="look")
    tg.edited_message(ALICE, "changed my mind", message_id=5)
    tg.private_text(ALICE, "still there?")
    sent = await tg.wait_for_sent(4)

    assert [(i.text, i.non_text) for i in recorder.inbounds] == [
        ("", "sticker"),
        ("", "photo"),
        ("", "edited"),
        ("still there?", None),
    ]
    assert all(i.sender == "telegram:42" and i.chat_kind == "direct" for i in recorder.inbounds)
    assert [s["text"] for s in sent] == ["got sticker", "got photo", "got edited", "got None"]


async def test_silent_outbound_sends_nothing(tg: FakeTelegram, recorder: Recorder) -> None:
    recorder.respond = lambda inbound: Outbound(text=None if inbound.text == "quiet" else "loud")
    tg.private_text(ALICE, "quiet")
    tg.private_text(ALICE, "speak")
    sent = await tg.wait_for_sent(1)
    await recorder.wait_for(2)
    assert [s["text"] for s in sent] == ["loud"]
    assert len(tg.sent) == 1


async def test_failing_handler_does_not_stop_the_connector(tg: FakeTelegram, recorder: Recorder) -> None:
    def explode_once(inbound: Inbound) -> Outbound:
        if inbound.text == "boom":
            raise RuntimeError("agent broke")
        return echo(inbound)

    recorder.respond = explode_once
    tg.private_text(ALICE, "boom")
    tg.private_text(ALICE, "after")
    sent = await tg.wait_for_sent(1)
    assert len(recorder.inbounds) == 2
    assert [s["text"] for s in sent] == ["direct|telegram:42|telegram:42|after"]


async def test_to_owner_goes_to_owner_private_chat(tg: FakeTelegram, recorder: Recorder) -> None:
    recorder.respond = lambda inbound: Outbound(text="I'll check with them.", to_owner="Alice asked about Friday.")
    tg.private_text(ALICE, "is Friday free?")
    sent = await tg.wait_for_sent(2)
    assert (sent[0]["chat_id"], sent[0]["text"]) == (42, "I'll check with them.")
    assert (sent[1]["chat_id"], sent[1]["text"]) == (OWNER_ID, "Alice asked about Friday.")


async def test_held_reply_buttons_go_with_the_owner_note(tg: FakeTelegram, recorder: Recorder) -> None:
    recorder.respond = lambda inbound: Outbound(
        text=None,
        actions=(Action("Approve", "/approve 3"),),
        to_owner="Alice asked for your address. Send the draft?",
    )
    tg.private_text(ALICE, "what's the address?")
    [sent] = await tg.wait_for_sent(1)
    assert sent["chat_id"] == OWNER_ID
    assert sent["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "/approve 3"


async def test_a_reply_with_an_owner_note_keeps_the_owners_buttons_off_the_reply(
    tg: FakeTelegram, recorder: Recorder
) -> None:
    """A consultation: the asker gets their reply, the owner the note with the buttons."""
    recorder.respond = lambda inbound: Outbound(
        text="Here's what I can share: Friday is free.",
        actions=(Action("Tell Alice", "/consult c1 tell"), Action("Keep private", "/consult c1 private")),
        to_owner="Alice asked about Friday.",
    )
    tg.private_text(ALICE, "is Friday free?")
    reply, note = await tg.wait_for_sent(2)
    assert (reply["chat_id"], reply["text"]) == (42, "Here's what I can share: Friday is free.")
    assert "reply_markup" not in reply  # the asker never gets the owner's buttons
    assert (note["chat_id"], note["text"]) == (OWNER_ID, "Alice asked about Friday.")
    assert [b["callback_data"] for row in note["reply_markup"]["inline_keyboard"] for b in row] == [
        "/consult c1 tell",
        "/consult c1 private",
    ]


async def test_to_owner_without_owner_configured_is_kept_undelivered(
    fake_telegram: FakeTelegram,  # noqa: F811
    recorder: Recorder,
    st: OpenState,
) -> None:
    tg = fake_telegram
    recorder.respond = lambda inbound: Outbound(text="ok", to_owner="note")
    conn = TelegramConnector(make_config(tg, owner_user_id=None), recorder, state=st.state)
    await conn.start()
    try:
        tg.private_text(ALICE, "hi")
        tg.private_text(ALICE, "again")
        sent = await tg.wait_for_sent(2)
        assert [s["chat_id"] for s in sent] == [42, 42]
        await tg.wait_until_consumed()
    finally:
        await conn.stop()
    # nowhere to send the owner's note: it is kept, not dropped
    kept = await st.deliveries.pending()
    assert [(k.kind, k.text, k.error) for k in kept] == [("owner_note", "note", "no_owner_chat")] * 2


# -- buttons ------------------------------------------------------------------------------------


async def test_actions_become_inline_keyboard_and_presses_come_back(tg: FakeTelegram, recorder: Recorder) -> None:
    long_command = "/reject " + "r" * 80
    recorder.respond = lambda inbound: (
        Outbound(
            text="Held reply #17",
            actions=(Action("Approve", "/approve 17"), Action("Reject", long_command)),
        )
        if inbound.text == "review"
        else echo(inbound)
    )
    tg.private_text(OWNER, "review")
    [held] = await tg.wait_for_sent(1)

    [row] = held["reply_markup"]["inline_keyboard"]
    assert [b["text"] for b in row] == ["Approve", "Reject"]
    assert row[0]["callback_data"] == "/approve 17"
    key = row[1]["callback_data"]
    assert key != long_command and len(key.encode()) <= CALLBACK_DATA_MAX_BYTES

    button_message = tg.sent_messages[0]
    tg.callback_query(OWNER, button_message, key)
    tg.callback_query(OWNER, button_message, "/approve 17")
    sent = await tg.wait_for_sent(3)

    assert [i.text for i in recorder.inbounds[1:]] == [long_command, "/approve 17"]
    pressed = recorder.inbounds[1]
    assert pressed.sender == f"telegram:{OWNER_ID}"
    assert pressed.chat_id == str(OWNER_ID) and pressed.chat_kind == "direct"
    assert pressed.audience == (f"telegram:{OWNER_ID}",)
    assert [s["chat_id"] for s in sent[1:]] == [OWNER_ID, OWNER_ID]
    assert len(tg.answered_callbacks) == 2


async def test_a_note_about_several_events_has_one_row_of_buttons_per_event(
    tg: FakeTelegram, recorder: Recorder
) -> None:
    """A consultation about three events of one question: each event's four buttons in a row
    of their own, each naming its own consultation."""
    keys = ("tell", "like", "who", "private")
    grouped = tuple(Action(f"{n}. {k}", f"/consult c{n} {k}", group=n) for n in (1, 2, 3) for k in keys)
    recorder.respond = lambda inbound: Outbound(text="Nothing new.", actions=grouped, to_owner="Alice asked: [1 of 3]")
    tg.private_text(ALICE, "any news?")
    _, note = await tg.wait_for_sent(2)
    rows = note["reply_markup"]["inline_keyboard"]
    assert [[b["callback_data"] for b in row] for row in rows] == [
        [f"/consult c{n} {k}" for k in keys] for n in (1, 2, 3)
    ]
    assert rows[1][0]["text"] == "2. tell"


async def test_no_message_is_parsed_as_markup_or_shows_a_link_preview(tg: FakeTelegram, recorder: Recorder) -> None:
    """Issue 38: a note quoting a contact's URL or markup draws no preview card and no markup,
    for the owner and for anyone else."""
    quoted = "Alice asked: <b>urgent</b> *see* https://evil.example/login"
    recorder.respond = lambda inbound: Outbound(text=quoted, to_owner=quoted)
    tg.private_text(ALICE, "https://evil.example/login")
    sent = await tg.wait_for_sent(2)
    assert sorted(s["chat_id"] for s in sent) == [42, OWNER_ID]
    for message in sent:
        assert message["text"] == quoted and "parse_mode" not in message, message
        assert message["link_preview_options"] == {"is_disabled": True}, message


async def test_expired_button_key_is_not_forwarded(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.private_text(ALICE, "hi")
    await tg.wait_for_sent(1)
    tg.callback_query(ALICE, tg.sent_messages[0], "cb#not-a-key-we-hold")
    tg.private_text(ALICE, "after")
    await tg.wait_for_sent(2)
    assert [i.text for i in recorder.inbounds] == ["hi", "after"]
    assert tg.answered_callbacks[0]["text"] == "This button has expired."


async def test_send_delivers_with_keyboard(tg: FakeTelegram, connector: TelegramConnector) -> None:
    await connector.send("42", "Your digest", actions=(Action("Open", "/digest open"),))
    [sent] = await tg.wait_for_sent(1)
    assert sent["chat_id"] == 42 and sent["text"] == "Your digest"
    assert sent["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "/digest open"


# -- groups -------------------------------------------------------------------------------------


async def test_group_message_without_mention_is_not_forwarded(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.group_message(GROUP_ID, CAROL, "talking among ourselves")
    tg.group_message(GROUP_ID, DAVE, "anyone?", mention=True)
    await tg.wait_for_sent(1)
    assert [i.sender for i in recorder.inbounds] == ["telegram:45"]


async def test_group_mention_audience_has_members_and_admins(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.admins[GROUP_ID] = [OWNER, OTHER_BOT]
    tg.group_message(GROUP_ID, CAROL, "hi all")
    group_update = tg.group_message(GROUP_ID, DAVE, "what's up?", mention=True)
    [sent] = await tg.wait_for_sent(1)

    [inbound] = recorder.inbounds
    assert inbound.chat_kind == "group"
    assert inbound.chat_id == str(GROUP_ID)
    assert inbound.sender == "telegram:45"
    assert inbound.text == "what's up?"  # the @mention is stripped
    assert inbound.audience == ("telegram:45", "telegram:44", f"telegram:{OWNER_ID}")
    assert not any("999" in who for who in inbound.audience)  # bots are not readers
    assert sent["chat_id"] == GROUP_ID
    assert sent["reply_parameters"]["message_id"] == group_update["message"]["message_id"]


async def test_readers_of_a_group_now_include_whoever_joined_since_the_question(
    tg: FakeTelegram, recorder: Recorder, connector: TelegramConnector
) -> None:
    """A consultation's follow-up in a group is decided for who is in it when it is sent."""
    assert isinstance(connector, KnowsReaders)
    tg.group_message(GROUP_ID, CAROL, "hi all")
    tg.group_message(GROUP_ID, DAVE, "what's up?", mention=True)
    await tg.wait_for_sent(1)
    assert recorder.inbounds[0].audience == ("telegram:45", "telegram:44")
    tg.new_chat_members(GROUP_ID, [ERIN], by=CAROL)
    tg.group_message(GROUP_ID, DAVE, "still there?", mention=True)  # handled after the join
    await tg.wait_for_sent(2)
    tg.member_counts[GROUP_ID] = 5  # the bot, Carol, Dave, Erin, and one nobody has seen
    readers = await connector.readers(str(GROUP_ID), "telegram:45")
    assert readers == ("telegram:45", "telegram:44", "telegram:46", f"telegram:unknown-{GROUP_ID}-1")
    for chat, sender in ((f"{GROUP_ID}@conn", "telegram:45"), (str(GROUP_ID), "slack:T1/U1"), ("x", "telegram:45")):
        with pytest.raises(ValueError):
            await connector.readers(chat, sender)


async def test_group_unknown_members_become_placeholders(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.member_counts[GROUP_ID] = 6  # Dave + our bot known; four nobody has seen
    tg.group_message(GROUP_ID, DAVE, "who is here?", mention=True)
    await tg.wait_for_sent(1)
    assert recorder.inbounds[0].audience == (
        "telegram:45",
        *(f"telegram:unknown-{GROUP_ID}-{n}" for n in range(1, 5)),
    )


async def test_group_member_count_unavailable_fails_closed(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.errors["getChatMemberCount"] = (400, "Bad Request: chat not found")
    tg.group_message(GROUP_ID, DAVE, "hello", mention=True)
    await tg.wait_for_sent(1)
    assert recorder.inbounds[0].audience == ("telegram:45", f"telegram:unknown-{GROUP_ID}-1")


async def test_joined_members_count_and_left_member_is_removed(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.group_message(GROUP_ID, CAROL, "bye soon")
    tg.new_chat_members(GROUP_ID, [ERIN, OTHER_BOT], by=DAVE)
    tg.left_chat_member(GROUP_ID, CAROL)
    tg.group_message(GROUP_ID, DAVE, "status?", mention=True)
    await tg.wait_for_sent(1)

    [inbound] = recorder.inbounds  # service messages are not forwarded
    assert inbound.audience == ("telegram:45", "telegram:46")


async def test_reply_to_bot_message_counts_as_addressed(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.group_message(GROUP_ID, DAVE, "ping", mention=True)
    await tg.wait_for_sent(1)
    tg.group_message(GROUP_ID, CAROL, "and me?", reply_to=tg.sent_messages[0])
    someone_else = {**tg.sent_messages[0], "from": DAVE}
    tg.group_message(GROUP_ID, CAROL, "not to the bot", reply_to=someone_else)
    tg.group_message(GROUP_ID, DAVE, "last", mention=True)
    await tg.wait_for_sent(3)
    assert [i.text for i in recorder.inbounds] == ["ping", "and me?", "last"]
    assert recorder.inbounds[1].sender == "telegram:44"


async def test_group_messages_from_bots_are_not_answered(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.group_message(GROUP_ID, OTHER_BOT, "beep", mention=True)
    tg.group_message(GROUP_ID, DAVE, "hi", mention=True)
    await tg.wait_for_sent(1)
    assert [i.sender for i in recorder.inbounds] == ["telegram:45"]


async def test_group_button_press_gets_group_audience(tg: FakeTelegram, recorder: Recorder) -> None:
    recorder.respond = lambda inbound: (
        Outbound(text="choose", actions=(Action("Yes", "/yes"),)) if inbound.text == "ask" else echo(inbound)
    )
    tg.group_message(GROUP_ID, CAROL, "hey")
    tg.group_message(GROUP_ID, DAVE, "ask", mention=True)
    await tg.wait_for_sent(1)
    tg.callback_query(CAROL, tg.sent_messages[0], "/yes")
    sent = await tg.wait_for_sent(2)
    pressed = recorder.inbounds[1]
    assert (pressed.sender, pressed.text, pressed.chat_kind) == ("telegram:44", "/yes", "group")
    assert pressed.audience == ("telegram:44", "telegram:45")
    assert sent[1]["chat_id"] == GROUP_ID


async def test_member_who_left_unseen_is_rechecked(
    fake_telegram: FakeTelegram,  # noqa: F811
    recorder: Recorder,
    st: OpenState,
) -> None:
    """A member seen once and gone since must not hide a newcomer from the count."""
    tg = fake_telegram
    conn = TelegramConnector(make_config(tg), recorder, state=st.state)
    await conn.start()
    try:
        tg.group_message(GROUP_ID, CAROL, "I was here")
        tg.group_message(GROUP_ID, DAVE, "first", mention=True)
        await tg.wait_for_sent(1)
        assert recorder.inbounds[0].audience == ("telegram:45", "telegram:44")

        tg._members[GROUP_ID].pop(CAROL["id"])  # Carol left; the bot missed it
        tg.member_counts[GROUP_ID] = 3  # Dave, the bot and a newcomer nobody has seen
        tg.group_message(GROUP_ID, DAVE, "second", mention=True)
        await tg.wait_for_sent(2)
        assert recorder.inbounds[1].audience == ("telegram:45", f"telegram:unknown-{GROUP_ID}-1")
    finally:
        await conn.stop()


# -- Telegram Business --------------------------------------------------------------------------


async def test_business_message_answered_through_connection(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.business_connection("bc-1", OWNER)
    tg.business_message("bc-1", BOB, "are you free tomorrow?")
    [sent] = await tg.wait_for_sent(1)

    [inbound] = recorder.inbounds
    assert inbound.chat_kind == "direct"
    assert inbound.chat_id == "43@bc-1"  # the route travels with the chat id
    assert inbound.delegation == "dm"  # answered as the owner
    assert inbound.sender == "telegram:43"
    assert inbound.audience == ("telegram:43",)
    assert sent["business_connection_id"] == "bc-1"
    assert sent["chat_id"] == 43


async def test_business_owner_bot_and_edited_messages_are_not_answered(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.business_connection("bc-1", OWNER)
    tg.business_message("bc-1", BOB, "the owner typing", sender=OWNER)
    tg.business_message("bc-1", BOB, "a bot echo", sender=OTHER_BOT)
    tg.business_message("bc-1", BOB, "edited", edited=True)
    tg.business_message("bc-1", BOB, "real question")
    sent = await tg.wait_for_sent(1)
    await tg.wait_until_consumed()
    assert [i.text for i in recorder.inbounds] == ["real question"]
    assert len(sent) == 1


async def test_business_connection_of_someone_else_is_not_used(tg: FakeTelegram, recorder: Recorder) -> None:
    tg.business_connection("bc-x", CAROL)
    tg.business_message("bc-x", BOB, "hello?")
    tg.business_connection("bc-off", OWNER, is_enabled=False)
    tg.business_message("bc-off", BOB, "hello again?")
    tg.private_text(ALICE, "direct")
    await tg.wait_for_sent(1)
    assert [i.text for i in recorder.inbounds] == ["direct"]


async def test_business_connection_learned_from_telegram_after_restart(tg: FakeTelegram, recorder: Recorder) -> None:
    """A connection made before this process started is looked up, not guessed."""
    tg.business_connections["bc-old"] = {
        "id": "bc-old",
        "user": OWNER,
        "user_chat_id": OWNER_ID,
        "date": 0,
        "is_enabled": True,
        "rights": {"can_reply": True},
    }
    tg.business_message("bc-old", BOB, "remember me?")
    tg.business_message("bc-old", BOB, "owner here", sender=OWNER)
    tg.business_message("bc-unknown", BOB, "who am I talking to?")
    tg.private_text(ALICE, "direct")
    sent = await tg.wait_for_sent(2)
    assert [i.text for i in recorder.inbounds] == ["remember me?", "direct"]
    assert sent[0]["business_connection_id"] == "bc-old"


async def test_a_button_press_in_a_business_chat_never_speaks_as_the_owner(
    tg: FakeTelegram, recorder: Recorder
) -> None:
    """Issue 38: the bot puts no buttons in the owner's Business chats, and whatever answered a
    press there would go out as the owner. A contact's forged press (a command, a question) and
    the owner's own press reach nobody: no Inbound, nothing sent through the connection."""
    tg.business_connection("bc-1", OWNER)
    tg.business_message("bc-1", BOB, "question")
    [answered] = await tg.wait_for_sent(1)
    assert answered["business_connection_id"] == "bc-1"
    in_business_chat = tg.sent_messages[0]
    tg.callback_query(BOB, in_business_chat, "/approve 0123abcd")
    tg.callback_query(BOB, in_business_chat, "Is the owner buying a boat?")
    tg.callback_query(OWNER, in_business_chat, "/approve 0123abcd")
    tg.private_text(ALICE, "after")
    sent = await tg.wait_for_sent(2)
    assert [i.text for i in recorder.inbounds] == ["question", "after"]
    assert [s.get("business_connection_id") for s in sent] == ["bc-1", None]
    assert len(tg.answered_callbacks) == 3 and not any(a.get("text") for a in tg.answered_callbacks)


async def test_send_to_business_chat_uses_its_connection(
    tg: FakeTelegram, connector: TelegramConnector, recorder: Recorder
) -> None:
    tg.business_connection("bc-1", OWNER)
    tg.business_message("bc-1", BOB, "question")
    await tg.wait_for_sent(1)
    await connector.send(recorder.inbounds[0].chat_id, "approved answer")
    await connector.send("43", "from the bot")
    sent = await tg.wait_for_sent(3)
    assert sent[1]["business_connection_id"] == "bc-1"
    assert "business_connection_id" not in sent[2]  # a plain chat id is the bot's own chat


# -- lifecycle and helpers ----------------------------------------------------------------------


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_webhook_mode_checks_secret_and_answers(
    fake_telegram: FakeTelegram,  # noqa: F811
    recorder: Recorder,
    st: OpenState,
) -> None:
    """PTB's webhook server needs tornado (the ``webhooks`` extra)."""
    pytest.importorskip("tornado")
    import aiohttp

    tg = fake_telegram
    port = _free_loopback_port()
    hook = f"http://127.0.0.1:{port}/tg-hook"
    config = make_config(tg, webhook_url=hook, webhook_listen="127.0.0.1", webhook_port=port, secret_token="s3cret")
    conn = TelegramConnector(config, recorder, state=st.state)
    await conn.start()
    try:
        [(_, registered)] = [c for c in tg.calls if c[0] == "setWebhook"]
        assert registered["url"] == hook and registered["secret_token"] == "s3cret"
        update = {
            "update_id": 1,
            "message": {
                "message_id": 1,
                "date": 0,
                "chat": FakeTelegram.private_chat(ALICE),
                "from": ALICE,
                "text": "via webhook",
            },
        }
        async with aiohttp.ClientSession(trust_env=False) as session:
            forged = {"X-Telegram-Bot-Api-Secret-Token": "wrong"}
            async with session.post(hook, json=update, headers=forged) as response:
                assert response.status == 403
            genuine = {"X-Telegram-Bot-Api-Secret-Token": "s3cret"}
            async with session.post(hook, json=update, headers=genuine) as response:
                assert response.status == 200
        [sent] = await tg.wait_for_sent(1)
        assert sent["chat_id"] == 42
        assert [i.text for i in recorder.inbounds] == ["via webhook"]
    finally:
        await conn.stop()


async def test_stop_is_idempotent(
    fake_telegram: FakeTelegram,  # noqa: F811
    recorder: Recorder,
    st: OpenState,
) -> None:
    conn = TelegramConnector(make_config(fake_telegram), recorder, state=st.state)
    await conn.stop()  # never started
    await conn.start()
    await conn.start()  # already running: no-op
    assert conn.running
    await conn.stop()
    await conn.stop()
    assert not conn.running
    await conn.start()  # a stopped connector can be started again
    try:
        fake_telegram.private_text(ALICE, "back again")
        await fake_telegram.wait_for_sent(1)
    finally:
        await conn.stop()


async def test_fake_rejects_unknown_methods(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    import aiohttp

    async with aiohttp.ClientSession(trust_env=False) as session:
        url = f"{fake_telegram.base_url}{fake_telegram.token}/noSuchMethod"
        async with session.post(url, data={"chat_id": "42"}) as response:
            body = await response.json()
    assert body["ok"] is False and body["error_code"] == 404
    assert fake_telegram.unknown_methods == ["noSuchMethod"]


def test_config_repr_hides_secrets() -> None:
    config = TelegramConfig(token="123:SECRET", secret_token="hook-secret")
    assert "SECRET" not in repr(config) and "hook-secret" not in repr(config)


def test_token_is_redacted_from_http_logs() -> None:
    url = "https://api.telegram.org/bot123:SECRET/getMe"
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "HTTP Request: %s %s", ("POST", url), None)
    RedactToken("123:SECRET").filter(record)
    assert "SECRET" not in record.getMessage()


def test_chunk_text_respects_telegram_limit() -> None:
    text = ("word " * 2000).strip()
    pieces = chunk_text(text, limit=4096)
    assert "".join(pieces) == text
    assert all(len(p.encode("utf-16-le")) // 2 <= 4096 for p in pieces)
    emoji = "\N{GRINNING FACE}" * 3000  # two UTF-16 units each
    assert all(len(p.encode("utf-16-le")) // 2 <= 4096 for p in chunk_text(emoji))
