"""The whole bot on Slack: signed HTTP requests into the real Bolt app, the real agent answers.

The service is started from the environment as ``epmem run`` would be (HTTP events on a free
loopback port, the Web API pointed at the fake). Bolt acknowledges before its listeners run,
so effects are awaited with ``wait_for`` and negative checks follow a later answered message
and ``drain()``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from connectors.slack import SlackConnector
from epmem.reply.respond import deflection
from testkit.fake_slack import (
    BOT_USER,
    FakeSlackApi,
    SlackSender,
    channel_message,
    event_envelope,
    im_message,
    mention,
    wait_for,
)
from testkit.house import COVER, HOUSE_Q, OWNER_NAME, OWNER_SLACK, ROOM_Q, SLACK, TEAM, TRUTH, house_runtime

SECRET = "e2e-signing-secret"
LEO, RAJ = SLACK["leo"], SLACK["raj"]


@dataclass
class Bot:
    api: FakeSlackApi
    runtime: Runtime
    connector: SlackConnector
    sender: SlackSender

    def texts(self, channel: str) -> list[str]:
        return [p["text"] for p in self.api.posts(channel)]

    def ephemeral(self, user: str) -> list[str]:
        return [c.params["text"] for c in self.api.calls_to("chat.postEphemeral") if c.params["user"] == user]


@pytest_asyncio.fixture
async def bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    api = FakeSlackApi(members={"C1": [LEO, RAJ, BOT_USER], "C2": [LEO, SLACK["grace"], BOT_USER]})
    await api.start()
    for name, value in api.service_env("xoxb-e2e", SECRET).items():
        monkeypatch.setenv(name, value)
    runtime = await house_runtime(tmp_path / "data")
    service = Service(runtime, PlatformSettings())
    try:
        assert service.platforms == ["slack"]
        await service.start()
        [connector] = service.connectors
        assert isinstance(connector, SlackConnector)
        yield Bot(api, runtime, connector, SlackSender(SECRET, lambda: connector.port))
    finally:
        await service.stop()
        await runtime.close()
        await api.stop()


def dm(user: str, text: str, event_id: str) -> dict[str, object]:
    return event_envelope(im_message(user, text, channel=f"D{user}"), event_id=event_id)


async def test_bad_signature_is_rejected_with_401(bot: Bot) -> None:
    status, _ = await bot.sender.event(dm(LEO, HOUSE_Q, "Ev-forged"), secret="someone-else")
    assert status == 401
    assert (await bot.sender.event(dm(LEO, "Are you there?", "Ev-ok")))[0] == 200
    await wait_for(lambda: len(bot.api.posts(f"D{LEO}")) == 1)
    await bot.connector.drain()
    assert [r.kind for r in await bot.runtime.audit.records()] == ["reply", "delivery"]


async def test_direct_message_gets_what_the_contact_may_know(bot: Bot) -> None:
    assert (await bot.sender.event(dm(LEO, HOUSE_Q, "Ev-1")))[0] == 200
    assert (await bot.sender.event(dm(RAJ, HOUSE_Q, "Ev-2")))[0] == 200
    await wait_for(lambda: bool(bot.api.posts(f"D{LEO}")) and bool(bot.api.posts(f"D{RAJ}")))
    assert TRUTH in bot.texts(f"D{LEO}")[0]
    assert COVER in bot.texts(f"D{RAJ}")[0] and TRUTH not in bot.texts(f"D{RAJ}")[0]
    senders = {r.body["sender"] for r in await bot.runtime.audit.records(kind="reply")}
    assert senders == {f"slack:{TEAM}/{LEO}", f"slack:{TEAM}/{RAJ}"}


async def test_mention_in_a_channel_answers_for_every_member(bot: Bot) -> None:
    await bot.sender.event(event_envelope(mention(LEO, f"<@{BOT_USER}> {HOUSE_Q}", channel="C1"), event_id="Ev-m1"))
    await bot.sender.event(
        event_envelope(mention(LEO, f"<@{BOT_USER}> {HOUSE_Q}", channel="C2", ts="1700000009.000900"), event_id="Ev-m2")
    )
    await wait_for(lambda: bool(bot.api.posts("C1")) and bool(bot.api.posts("C2")))
    [with_raj] = bot.api.posts("C1")
    assert COVER in with_raj["text"] and TRUTH not in with_raj["text"]
    assert with_raj["thread_ts"] == "1700000002.000200"
    assert TRUTH in bot.texts("C2")[0]  # Leo and Grace: family
    audiences = sorted(r.body["audience"] for r in await bot.runtime.audit.records(kind="reply"))
    assert audiences == [["leo", "grace"], ["leo", "raj"]]


async def test_slash_command_from_the_owner_and_from_someone_else(bot: Bot) -> None:
    assert (await bot.sender.command("allow f1 to raj", user=RAJ))[0] == 200
    await wait_for(lambda: len(bot.ephemeral(RAJ)) == 1)
    assert bot.ephemeral(RAJ) == [deflection(OWNER_NAME)]
    assert await bot.runtime.overlay.exceptions() == []
    assert (await bot.sender.command("allow f1 to raj", user=OWNER_SLACK))[0] == 200
    await wait_for(lambda: len(bot.ephemeral(OWNER_SLACK)) == 1)
    assert bot.ephemeral(OWNER_SLACK)[0] == "Exception 1: allow raj on fact f1."
    await bot.sender.event(dm(RAJ, HOUSE_Q, "Ev-after"))
    await wait_for(lambda: bool(bot.api.posts(f"D{RAJ}")))
    assert TRUTH in bot.texts(f"D{RAJ}")[0]
    [change] = await bot.runtime.audit.records(kind="policy_change")
    assert change.body["by"] == f"slack:{TEAM}/{OWNER_SLACK}"
    [attempt] = await bot.runtime.audit.records(kind="attempted_command")
    assert attempt.body["sender"] == f"slack:{TEAM}/{RAJ}"


async def test_a_retried_event_is_answered_once(bot: Bot) -> None:
    envelope = dm(LEO, HOUSE_Q, "Ev-retried")
    assert (await bot.sender.event(envelope))[0] == 200
    assert (await bot.sender.event(envelope, retry_num=1))[0] == 200
    assert (await bot.sender.event(dm(RAJ, HOUSE_Q, "Ev-later")))[0] == 200
    await wait_for(lambda: bool(bot.api.posts(f"D{RAJ}")))
    await bot.connector.drain()
    assert len(bot.api.posts(f"D{LEO}")) == 1
    assert len(await bot.runtime.audit.records(contact="leo")) == 1


async def test_held_reply_is_approved_with_a_button(bot: Bot) -> None:
    await bot.sender.command("approval 2", user=OWNER_SLACK)
    await wait_for(lambda: len(bot.ephemeral(OWNER_SLACK)) == 1)
    await bot.sender.event(dm(LEO, HOUSE_Q, "Ev-held"))
    owner_dm = f"D{OWNER_SLACK}"
    await wait_for(lambda: bool(bot.api.posts(owner_dm)))
    [note] = bot.api.posts(owner_dm)
    assert note["text"].startswith("Held reply ") and TRUTH in note["text"]
    buttons = note["blocks"][-1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Approve", "Edit", "Reject"]
    assert bot.api.posts(f"D{LEO}") == []  # nothing reached Leo yet
    await bot.sender.block_action(buttons[0]["value"], user=OWNER_SLACK, channel=owner_dm)
    await wait_for(lambda: bool(bot.api.posts(f"D{LEO}")))
    assert TRUTH in bot.texts(f"D{LEO}")[0]
    await wait_for(lambda: len(bot.api.posts(owner_dm)) == 2)
    assert bot.texts(owner_dm)[1].startswith("Sent held reply")


async def test_a_group_dm_is_answered_for_everyone_in_it(bot: Bot) -> None:
    """Issue 21: no message.mpim / mpim:history, so group DMs were never answered. A mention in
    a group DM, then a follow-up in its thread (a ``message.mpim`` event), both answered in the
    thread for every member."""
    bot.api.members["G1"] = [LEO, RAJ, BOT_USER]
    await bot.sender.event(event_envelope(mention(LEO, f"<@{BOT_USER}> {HOUSE_Q}", channel="G1"), event_id="Ev-g1"))
    await wait_for(lambda: len(bot.api.posts("G1")) == 1)
    await bot.connector.drain()  # the thread is followed once the answer is through
    follow_up = channel_message(
        RAJ,
        "And how is the house hunt going now?",
        channel="G1",
        channel_type="mpim",
        ts="1700000010.000100",
        thread_ts="1700000002.000200",
    )
    await bot.sender.event(event_envelope(follow_up, event_id="Ev-g2"))
    await wait_for(lambda: len(bot.api.posts("G1")) == 2)
    for post in bot.api.posts("G1"):
        assert post["thread_ts"] == "1700000002.000200" and TRUTH not in post["text"]
    audiences = [r.body["audience"] for r in await bot.runtime.audit.records(kind="reply")]
    assert audiences == [["leo", "raj"], ["raj", "leo"]] or audiences == [["leo", "raj"], ["leo", "raj"]]


async def test_after_the_owner_allows_the_truth_the_question_its_cover_answered_gets_the_truth(bot: Bot) -> None:
    assert (await bot.sender.event(dm(RAJ, ROOM_Q, "Ev-room-1")))[0] == 200
    await wait_for(lambda: len(bot.api.posts(f"D{RAJ}")) == 1)
    assert COVER in bot.texts(f"D{RAJ}")[0] and TRUTH not in bot.texts(f"D{RAJ}")[0]
    assert (await bot.sender.command("allow f1 to raj", user=OWNER_SLACK))[0] == 200
    await wait_for(lambda: len(bot.ephemeral(OWNER_SLACK)) == 1)
    assert (await bot.sender.event(dm(RAJ, ROOM_Q, "Ev-room-2")))[0] == 200
    await wait_for(lambda: len(bot.api.posts(f"D{RAJ}")) == 2)
    assert TRUTH in bot.texts(f"D{RAJ}")[1]
