"""Slack delegate mode, through the real Bolt app: answering as the owner, never over the owner.

The app holds the owner's user token (``xoxp-owner``): events from the owner's own DMs arrive
naming the owner as the authorized party, and replies to them are posted with the owner's
token. The delegate waits ``delegate_delay_s`` before answering; the test holds that wait open
(``GatedTimer``) to let the owner write first, then releases it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connectors.base import Inbound, Outbound
from connectors.slack import SlackConfig, SlackConnector, SlackStartError
from testkit.clock import FakeTimer, GatedTimer
from testkit.fake_slack import (
    BOT_USER,
    TEAM,
    FakeSlackApi,
    SlackSender,
    channel_message,
    event_envelope,
    im_message,
    wait_for,
)
from testkit.handler import RecordingHandler
from testkit.state import OpenState, connector_state

SECRET = "delegate-secret"
OWNER = "UOWNER"
USER_TOKEN = "xoxp-owner"
DELAY = 30.0
LEO_DM = "DOWNLEO"  # the owner's DM with Leo (not the bot's)
ASKED = "1700000100.000100"


def as_owner(inbound: Inbound) -> Outbound:
    """The delegate answers as the owner; a message with no text gets no answer."""
    return Outbound(text=f"as owner: {inbound.text}" if inbound.text else None)


@dataclass
class Rig:
    api: FakeSlackApi
    st: OpenState
    clock: GatedTimer
    handler: RecordingHandler
    connector: SlackConnector
    sender: SlackSender
    n: int = 0

    async def send(self, event: dict[str, Any], authorized: str = OWNER) -> None:
        self.n += 1
        status, _ = await self.sender.event(event_envelope(event, event_id=f"Ev-{self.n}", authorized=authorized))
        assert status == 200

    def owner_posts(self, channel: str) -> list[str]:
        return [
            c.params["text"]
            for c in self.api.calls_to("chat.postMessage")
            if c.ok and c.params.get("channel") == channel and c.token == USER_TOKEN
        ]


def config(api: FakeSlackApi, clock: FakeTimer, **overrides: Any) -> SlackConfig:
    settings: dict[str, Any] = {
        "signing_secret": SECRET,
        "api_url": api.api_url,
        "host": "127.0.0.1",
        "port": 0,
        "owner_identity": f"slack:{TEAM}/{OWNER}",
        "user_token": USER_TOKEN,
        "delegate_delay_s": DELAY,
        "timer": clock.timer,
    }
    settings.update(overrides)
    return SlackConfig("xoxb-delegate", **settings)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    api = FakeSlackApi(members={"C1": ["U1", "U2", OWNER]}, user_tokens={USER_TOKEN: OWNER}, page_size=50)
    await api.start()
    clock = GatedTimer(gated_s=DELAY)
    async with connector_state(tmp_path) as st:
        handler = RecordingHandler(reply=as_owner)
        connector = SlackConnector(config(api, clock), handler, state=st.state)
        await connector.start()
        try:
            yield Rig(api, st, clock, handler, connector, SlackSender(SECRET, lambda: connector.port))
        finally:
            clock.open()
            await connector.stop()
            await api.stop()


async def colleague_asks(rig: Rig, text: str = "are you free on Friday?") -> None:
    rig.api.say(LEO_DM, "ULEO", text, ASKED)
    await rig.send(im_message("ULEO", text, channel=LEO_DM, ts=ASKED))
    await wait_for(lambda: rig.clock.waiting == 1)


async def test_a_colleagues_dm_to_the_owner_is_answered_as_the_owner(rig: Rig) -> None:
    await colleague_asks(rig)
    assert rig.handler.inbounds == []  # nothing before the owner had their chance
    rig.clock.open()
    await wait_for(lambda: len(rig.owner_posts(LEO_DM)) == 1)
    [inbound] = rig.handler.inbounds
    assert (inbound.delegation, inbound.chat_kind, inbound.chat_id) == ("dm", "direct", f"as-owner:{LEO_DM}")
    assert inbound.sender == f"slack:{TEAM}/ULEO" and inbound.audience == (f"slack:{TEAM}/ULEO",)
    assert rig.owner_posts(LEO_DM) == ["as owner: are you free on Friday?"]
    assert rig.api.posts(LEO_DM)[0].get("thread_ts") is None


async def test_the_owner_typing_first_stops_the_delegate(rig: Rig) -> None:
    await colleague_asks(rig)
    await rig.send(im_message(OWNER, "yes, after 3", channel=LEO_DM, ts="1700000101.000100"))
    await rig.connector.drain(0.2)
    rig.clock.open()
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    await rig.connector.drain()
    [inbound] = rig.handler.inbounds  # the owner's own message never reaches the agent
    assert (inbound.text, inbound.non_text, inbound.delegation) == ("", "owner_answered", "dm")
    assert rig.owner_posts(LEO_DM) == []


async def test_an_answer_only_history_shows_also_stops_the_delegate(rig: Rig) -> None:
    """The owner's message event may lag; the history, read with the owner's token, tells."""
    await colleague_asks(rig)
    rig.api.say(LEO_DM, OWNER, "on it", "1700000102.000100")
    rig.clock.open()
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    await rig.connector.drain()
    assert rig.handler.inbounds[0].non_text == "owner_answered"
    history = rig.api.calls_to("conversations.history")
    assert history and history[0].token == USER_TOKEN and history[0].params["oldest"] == ASKED
    assert rig.owner_posts(LEO_DM) == []


async def test_our_own_posts_as_the_owner_do_not_count_as_the_owner_answering(rig: Rig) -> None:
    rig.clock.open()
    await rig.send(im_message("ULEO", "first", channel=LEO_DM, ts=ASKED))
    await wait_for(lambda: len(rig.owner_posts(LEO_DM)) == 1)
    ours = [m for m in rig.api.messages[LEO_DM] if m["user"] == OWNER][0]
    await rig.send(im_message(OWNER, ours["text"], channel=LEO_DM, ts=ours["ts"]))  # Slack echoes our post
    later = f"{float(ours['ts']) + 1:.6f}"
    rig.api.say(LEO_DM, "ULEO", "second", later)
    await rig.send(im_message("ULEO", "second", channel=LEO_DM, ts=later))
    await wait_for(lambda: len(rig.owner_posts(LEO_DM)) == 2)
    assert [i.text for i in rig.handler.inbounds] == ["first", "second"]


async def test_the_owners_dm_with_the_bot_is_still_the_owners_channel_to_the_bot(rig: Rig) -> None:
    rig.clock.open()
    await rig.send(im_message("USLACKBOT", "Reminder: pay rent", channel="DSLACKBOT"))  # Slack's own, never asking
    await rig.send(im_message(OWNER, "/pending", channel=f"D{OWNER}"))  # Slack may name the owner here
    await rig.send(im_message("U1", "hello bot", channel="DU1"), authorized=BOT_USER)
    await wait_for(lambda: len(rig.handler.inbounds) == 2)
    colleague, owner = sorted(rig.handler.inbounds, key=lambda i: i.sender)
    assert (owner.chat_id, owner.delegation, owner.text) == (f"D{OWNER}", None, "/pending")
    assert (colleague.chat_id, colleague.delegation) == ("DU1", None)
    assert rig.clock.waiting == 0  # neither waited: neither is answered as the owner


async def test_a_mention_of_the_owner_is_answered_as_the_owner_in_the_thread(rig: Rig) -> None:
    rig.clock.open()
    await rig.send(channel_message("U1", f"<@{OWNER}> can you review this?", ts="1700000200.000100"))
    await wait_for(lambda: len(rig.owner_posts("C1")) == 1)
    [inbound] = rig.handler.inbounds
    assert (inbound.delegation, inbound.chat_kind, inbound.text) == ("mention", "group", "can you review this?")
    assert inbound.chat_id == "as-owner:C1/1700000200.000100"
    assert set(inbound.audience) == {f"slack:{TEAM}/{u}" for u in ("U1", "U2", OWNER)}
    assert [c.token for c in rig.api.calls_to("conversations.members")] == [USER_TOKEN]  # listed as the owner
    assert rig.api.posts("C1")[0]["thread_ts"] == "1700000200.000100"


async def test_an_approved_reply_goes_out_as_the_owner(rig: Rig) -> None:
    await rig.connector.send(f"as-owner:{LEO_DM}", "approved answer")
    await rig.connector.send("C1/1700000200.000100", "in the thread, from the bot")
    assert rig.owner_posts(LEO_DM) == ["approved answer"]
    [bot_post] = [c for c in rig.api.calls_to("chat.postMessage") if c.params["channel"] == "C1"]
    assert bot_post.token == "xoxb-delegate" and bot_post.params["thread_ts"] == "1700000200.000100"


async def test_someone_elses_user_token_refuses_to_start(tmp_path: Path) -> None:
    api = FakeSlackApi(user_tokens={USER_TOKEN: "USOMEONE"})
    await api.start()
    try:
        async with connector_state(tmp_path) as st:
            connector = SlackConnector(config(api, FakeTimer()), RecordingHandler(reply=as_owner), state=st.state)
            with pytest.raises(SlackStartError, match="owner"):
                await connector.start()
            await connector.stop()
    finally:
        await api.stop()


async def test_without_the_owners_token_the_owners_dms_are_left_alone(tmp_path: Path) -> None:
    """An app granted user scopes receives the owner's DMs even when SLACK_USER_TOKEN is not set."""
    api = FakeSlackApi(user_tokens={USER_TOKEN: OWNER})
    await api.start()
    try:
        async with connector_state(tmp_path) as st:
            handler = RecordingHandler()
            connector = SlackConnector(config(api, FakeTimer(), user_token=None), handler, state=st.state)
            await connector.start()
            sender = SlackSender(SECRET, lambda: connector.port)
            try:
                await sender.event(
                    event_envelope(im_message("ULEO", "hi Maya", channel=LEO_DM), event_id="Ev-a", authorized=OWNER)
                )
                await sender.event(event_envelope(im_message("U1", "hi bot", channel="DU1"), event_id="Ev-b"))
                await wait_for(lambda: len(api.posts("DU1")) == 1)
                await connector.drain()
            finally:
                await connector.stop()
        assert [i.text for i in handler.inbounds] == ["hi bot"]
        assert api.posts(LEO_DM) == []
    finally:
        await api.stop()
