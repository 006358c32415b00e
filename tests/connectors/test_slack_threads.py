"""Slack threads and channel membership, through the real Bolt app (signed HTTP events).

A follow-up in a thread the bot answered is answered in the thread without a new mention, with
the channel's members as its readers; it stops when the owner writes in the thread. Member
lists are cached and a ``member_joined_channel`` / ``member_left_channel`` event changes the
next audience. Negative checks follow a later "sentinel" DM that was answered and ``drain()``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connectors.slack import SlackConfig, SlackConnector
from testkit.clock import FakeTimer
from testkit.fake_slack import (
    BOT_USER,
    TEAM,
    FakeSlackApi,
    SlackSender,
    channel_message,
    event_envelope,
    im_message,
    member_event,
    mention,
    wait_for,
)
from testkit.handler import RecordingHandler
from testkit.state import OpenState, connector_state

SECRET = "threads-secret"
OWNER = "UOWNER"
ROOT = "1700000010.000100"


@dataclass
class Rig:
    api: FakeSlackApi
    st: OpenState
    handler: RecordingHandler
    connector: SlackConnector
    sender: SlackSender
    n: int = 0

    async def send(self, event: dict[str, Any]) -> None:
        self.n += 1
        status, _ = await self.sender.event(event_envelope(event, event_id=f"Ev-{self.n}"))
        assert status == 200

    async def sentinel(self, tag: str) -> None:
        await self.send(im_message("USENT", tag, channel="DSENT"))
        await wait_for(lambda: any(p.get("text") == f"echo: {tag}" for p in self.api.posts("DSENT")), message=tag)
        await self.connector.drain()

    def new_connector(self) -> SlackConnector:
        return SlackConnector(config(self.api), self.handler, state=self.st.state)


def config(api: FakeSlackApi) -> SlackConfig:
    return SlackConfig(
        "xoxb-threads",
        signing_secret=SECRET,
        api_url=api.api_url,
        host="127.0.0.1",
        port=0,
        owner_identity=f"slack:{TEAM}/{OWNER}",
        timer=FakeTimer().timer,
    )


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    api = FakeSlackApi(members={"C1": ["U1", "U2", OWNER, BOT_USER]}, page_size=50)
    await api.start()
    async with connector_state(tmp_path) as st:
        handler = RecordingHandler()
        connector = SlackConnector(config(api), handler, state=st.state)
        await connector.start()
        current = Rig(api, st, handler, connector, SlackSender(SECRET, lambda: current.connector.port))
        try:
            yield current
        finally:
            await current.connector.stop()
            await api.stop()


async def ask_in_thread(rig: Rig) -> None:
    await rig.send(mention("U1", f"<@{BOT_USER}> how is it going?", ts=ROOT))
    await wait_for(lambda: len(rig.api.posts("C1")) == 1)
    await rig.connector.drain()


async def test_a_follow_up_in_the_thread_is_answered_once_in_the_thread(rig: Rig) -> None:
    await ask_in_thread(rig)
    follow_up = channel_message("U2", "and the weekend?", ts="1700000011.000100", thread_ts=ROOT)
    await rig.send(follow_up)
    rig.n -= 1
    await rig.send(follow_up)  # Slack's retry of the same event: answered once
    await wait_for(lambda: len(rig.api.posts("C1")) == 2)
    await rig.sentinel("after")
    assert rig.handler.texts() == ["how is it going?", "and the weekend?", "after"]
    inbound = rig.handler.inbounds[1]
    assert (inbound.chat_kind, inbound.chat_id, inbound.sender) == ("group", f"C1/{ROOT}", f"slack:{TEAM}/U2")
    assert set(inbound.audience) == {f"slack:{TEAM}/{u}" for u in ("U1", "U2", OWNER)}
    assert [p.get("thread_ts") for p in rig.api.posts("C1")] == [ROOT, ROOT]


async def test_messages_not_for_the_bot_are_left_alone(rig: Rig) -> None:
    await ask_in_thread(rig)
    await rig.send(channel_message("U2", "<@U1> what do you think?", ts="1700000012.000100", thread_ts=ROOT))
    await rig.send(channel_message("U2", "unrelated thread", ts="1700000013.000100", thread_ts="1700000009.000001"))
    await rig.send(channel_message("U2", "top level chatter", ts="1700000014.000100"))
    await rig.send(
        channel_message("U2", f"<@{BOT_USER}> app_mention answers this", ts="1700000015.000100", thread_ts=ROOT)
    )
    await rig.sentinel("after")
    assert rig.handler.texts() == ["how is it going?", "after"]


async def test_the_owner_writing_in_the_thread_takes_it_over(rig: Rig) -> None:
    await ask_in_thread(rig)
    await rig.send(channel_message(OWNER, "I'll take it from here", ts="1700000016.000100", thread_ts=ROOT))
    await rig.send(channel_message("U2", "ok, and then?", ts="1700000017.000100", thread_ts=ROOT))
    await rig.sentinel("after")
    assert rig.handler.texts() == ["how is it going?", "after"]


async def test_a_followed_thread_is_still_followed_after_a_restart(rig: Rig) -> None:
    await ask_in_thread(rig)
    await rig.connector.stop()
    rig.connector = rig.new_connector()
    await rig.connector.start()
    await rig.send(channel_message("U2", "still there?", ts="1700000018.000100", thread_ts=ROOT))
    await wait_for(lambda: len(rig.api.posts("C1")) == 2)
    assert rig.handler.texts()[-1] == "still there?"


async def test_membership_events_change_the_next_audience(rig: Rig) -> None:
    def readers() -> set[str]:
        return {a.rsplit("/", 1)[1] for a in rig.handler.inbounds[-1].audience}

    await rig.send(mention("U1", f"<@{BOT_USER}> one", ts="1700000020.000100"))
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    await rig.send(mention("U1", f"<@{BOT_USER}> two", ts="1700000021.000100"))
    await wait_for(lambda: len(rig.handler.inbounds) == 2)
    assert readers() == {"U1", "U2", OWNER}
    assert len(rig.api.calls_to("conversations.members")) == 1  # cached between the two

    rig.api.members["C1"].append("U3")
    await rig.send(member_event("member_joined_channel", "U3"))
    await rig.connector.drain()
    await rig.send(mention("U1", f"<@{BOT_USER}> three", ts="1700000022.000100"))
    await wait_for(lambda: len(rig.handler.inbounds) == 3)
    assert readers() == {"U1", "U2", "U3", OWNER}

    rig.api.members["C1"].remove("U2")
    await rig.send(member_event("member_left_channel", "U2"))
    await rig.connector.drain()
    await rig.send(mention("U1", f"<@{BOT_USER}> four", ts="1700000023.000100"))
    await wait_for(lambda: len(rig.handler.inbounds) == 4)
    assert readers() == {"U1", "U3", OWNER}
    assert len(rig.api.calls_to("conversations.members")) == 3
