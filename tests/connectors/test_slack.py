"""The Slack connector against the real Bolt app: signed HTTP requests in, a fake Web API out.

Nothing of Bolt or the connector is mocked. Bolt acknowledges before listeners run, so effects
are awaited with ``wait_for`` (polling, bounded) and negative checks are made after a later
"sentinel" event was answered and ``drain()`` returned: listeners start in arrival order, so the
earlier one has run by then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError

from connectors.base import Action, Inbound, KnowsReaders, Outbound
from connectors.slack import SlackConfig, SlackConnector, build_blocks
from testkit.clock import FakeTimer
from testkit.fake_slack import (
    BOT_USER,
    TEAM,
    FakeSlackApi,
    SlackSender,
    event_envelope,
    im_message,
    member_event,
    mention,
    wait_for,
)
from testkit.handler import RecordingHandler
from testkit.state import OpenState, connector_state

SECRET = "test-signing-secret"
OWNER = "UOWNER"


@dataclass
class Rig:
    api: FakeSlackApi
    handler: RecordingHandler
    connector: SlackConnector
    sender: SlackSender
    st: OpenState

    def new_connector(self) -> SlackConnector:
        return SlackConnector(_config(self.api), self.handler, state=self.st.state)

    async def sentinel(self, tag: str) -> None:
        """Deliver a DM and wait until it is answered, then let earlier listeners finish."""
        status, _ = await self.sender.event(
            event_envelope(im_message("USENT", tag, channel="DSENT"), event_id=f"Ev-sentinel-{tag}")
        )
        assert status == 200
        await wait_for(lambda: any(p.get("text") == f"echo: {tag}" for p in self.api.posts("DSENT")), message=tag)
        await self.connector.drain()


def _config(api: FakeSlackApi, **overrides: Any) -> SlackConfig:
    """Pacing runs on a fake clock: posts to one channel are spaced in virtual time, not real."""
    settings: dict[str, Any] = {
        "signing_secret": SECRET,
        "api_url": api.api_url,
        "host": "127.0.0.1",
        "port": 0,
        "owner_identity": f"slack:{TEAM}/{OWNER}",
        "timer": FakeTimer().timer,
    }
    settings.update(overrides)
    return SlackConfig("xoxb-test-token", **settings)


@pytest.fixture
async def st(tmp_path: Path) -> AsyncIterator[OpenState]:
    async with connector_state(tmp_path) as opened:
        yield opened


@pytest.fixture
async def rig(st: OpenState) -> AsyncIterator[Rig]:
    api = FakeSlackApi(members={"C1": ["U1", "U2", BOT_USER, "U3"]})
    await api.start()
    handler = RecordingHandler()
    connector = SlackConnector(_config(api), handler, state=st.state)
    await connector.start()
    current = Rig(api, handler, connector, SlackSender(SECRET, lambda: current.connector.port), st)
    try:
        yield current
    finally:
        await current.connector.stop()
        await api.stop()


def _dm(text: str, event_id: str, user: str = "U1", channel: str = "D1", **extra: Any) -> dict[str, Any]:
    return event_envelope(im_message(user, text, channel=channel, **extra), event_id=event_id)


# ------------------------------------------------------------------ transport and security


async def test_url_verification_challenge(rig: Rig) -> None:
    body = {"token": "legacy", "challenge": "chal-123", "type": "url_verification"}
    status, text = await rig.sender.event(body)
    assert status == 200
    assert "chal-123" in text
    assert rig.handler.inbounds == []


async def test_bad_signature_is_refused(rig: Rig) -> None:
    status, _ = await rig.sender.event(_dm("hi", "Ev-bad"), secret="not-the-secret")
    assert status == 401
    assert rig.handler.inbounds == []


async def test_stale_timestamp_is_refused(rig: Rig) -> None:
    status, _ = await rig.sender.event(_dm("hi", "Ev-stale"), timestamp=int(time.time()) - 600)
    assert status == 401
    await rig.sentinel("after-stale")
    assert rig.handler.texts() == ["after-stale"]


async def test_http_requires_signing_secret(st: OpenState) -> None:
    with pytest.raises(ValueError):
        SlackConnector(SlackConfig("xoxb-x"), RecordingHandler(), state=st.state)


async def test_rejected_bot_token_fails_start(st: OpenState) -> None:
    api = FakeSlackApi(fail={"auth.test": "invalid_auth"})
    await api.start()
    try:
        connector = SlackConnector(_config(api), RecordingHandler(), state=st.state)
        with pytest.raises(SlackApiError):
            await connector.start()
        assert connector.port is None
        await connector.stop()  # nothing started; still safe
    finally:
        await api.stop()


async def test_stop_is_idempotent(rig: Rig) -> None:
    await rig.connector.stop()
    await rig.connector.stop()


# ------------------------------------------------------------------ direct messages


async def test_direct_message_roundtrip(rig: Rig) -> None:
    status, _ = await rig.sender.event(_dm("where is Anna?", "Ev-dm1"))
    assert status == 200
    await wait_for(lambda: len(rig.api.posts("D1")) == 1)
    (inbound,) = rig.handler.inbounds
    assert inbound.platform == "slack"
    assert inbound.sender == f"slack:{TEAM}/U1"
    assert inbound.chat_kind == "direct"
    assert inbound.chat_id == "D1"
    assert inbound.audience == (f"slack:{TEAM}/U1",)
    assert inbound.text == "where is Anna?"
    assert inbound.non_text is None
    post = rig.api.posts("D1")[0]
    assert post["text"] == "echo: where is Anna?"
    assert "thread_ts" not in post
    assert rig.api.calls_to("chat.postMessage")[0].token == "xoxb-test-token"


async def test_inbound_text_is_unescaped_and_outbound_escaped(rig: Rig) -> None:
    rig.handler.reply = lambda i: Outbound(text="ping <!channel> & co")
    await rig.sender.event(_dm("a &lt;b&gt; &amp;amp;", "Ev-esc"))
    await wait_for(lambda: len(rig.api.posts("D1")) == 1)
    assert rig.handler.texts() == ["a <b> &amp;"]
    assert rig.api.posts("D1")[0]["text"] == "ping &lt;!channel&gt; &amp; co"


async def test_ignored_messages(rig: Rig) -> None:
    await rig.sender.event(_dm("from a bot", "Ev-bot", bot_id="B9"))
    await rig.sender.event(_dm("joined", "Ev-join", subtype="channel_join"))
    await rig.sender.event(
        event_envelope(
            {
                "type": "message",
                "subtype": "message_changed",
                "channel_type": "im",
                "channel": "D1",
                "message": {"user": "U1", "text": "edited", "ts": "1.1"},
                "ts": "1.2",
            },
            event_id="Ev-edit",
        )
    )
    await rig.sender.event(_dm("own echo", "Ev-self", user=BOT_USER))
    # a plain channel message (not a mention) is not for the bot
    await rig.sender.event(
        event_envelope({**im_message("U1", "chatter", channel="C1"), "channel_type": "channel"}, event_id="Ev-chan")
    )
    await rig.sentinel("after-ignored")
    assert rig.handler.texts() == ["after-ignored"]
    assert rig.api.posts("D1") == []


async def test_file_without_text(rig: Rig) -> None:
    files = [{"id": "F1", "name": "photo.jpg"}]
    await rig.sender.event(_dm("", "Ev-file", subtype="file_share", files=files))
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    inbound = rig.handler.inbounds[0]
    assert inbound.text == ""
    assert inbound.non_text == "file"


async def test_too_long_text_is_truncated(rig: Rig) -> None:
    await rig.sender.event(_dm("x" * 5000, "Ev-long"))
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    inbound = rig.handler.inbounds[0]
    assert inbound.text == "x" * 4000
    assert inbound.non_text == "too_long"


# ------------------------------------------------------------------ mentions and audience


async def test_app_mention_audience_is_channel_members(rig: Rig) -> None:
    status, _ = await rig.sender.event(
        event_envelope(mention("U2", f"<@{BOT_USER}> what is Anna up to?"), event_id="Ev-m1")
    )
    assert status == 200
    await wait_for(lambda: len(rig.api.posts("C1")) == 1)
    (inbound,) = rig.handler.inbounds
    assert inbound.chat_kind == "group"
    assert inbound.chat_id == "C1/1700000002.000200"  # the thread the answer lives in
    assert inbound.sender == f"slack:{TEAM}/U2"
    assert inbound.text == "what is Anna up to?"
    assert set(inbound.audience) == {f"slack:{TEAM}/U1", f"slack:{TEAM}/U2", f"slack:{TEAM}/U3"}
    member_calls = rig.api.calls_to("conversations.members")
    assert len(member_calls) == 2  # two pages of two
    assert member_calls[1].params["cursor"] == "2"
    post = rig.api.posts("C1")[0]
    assert post["thread_ts"] == "1700000002.000200"
    assert post["text"] == "echo: what is Anna up to?"


async def test_readers_of_a_channel_now_include_whoever_joined_since_the_question(rig: Rig) -> None:
    """A consultation's follow-up in a channel is decided for who is in it when it is sent."""
    assert isinstance(rig.connector, KnowsReaders)
    await rig.sender.event(event_envelope(mention("U2", f"<@{BOT_USER}> news?"), event_id="Ev-r1"))
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    (inbound,) = rig.handler.inbounds
    assert set(inbound.audience) == {f"slack:{TEAM}/U1", f"slack:{TEAM}/U2", f"slack:{TEAM}/U3"}
    rig.api.members["C1"].append("U4")
    await rig.sender.event(event_envelope(member_event("member_joined_channel", "U4"), event_id="Ev-r2"))
    await rig.connector.drain()
    readers = await rig.connector.readers(inbound.chat_id, inbound.sender)
    assert readers[0] == inbound.sender
    assert set(readers) == {f"slack:{TEAM}/U1", f"slack:{TEAM}/U2", f"slack:{TEAM}/U3", f"slack:{TEAM}/U4"}
    for chat, sender in (("as-owner:C1", inbound.sender), ("C1", "telegram:45"), ("#general", inbound.sender)):
        with pytest.raises(ValueError):
            await rig.connector.readers(chat, sender)


async def test_mention_in_thread_replies_in_that_thread(rig: Rig) -> None:
    await rig.sender.event(
        event_envelope(mention("U2", f"<@{BOT_USER}> hi", thread_ts="1699999999.000001"), event_id="Ev-mt")
    )
    await wait_for(lambda: len(rig.api.posts("C1")) == 1)
    assert rig.api.posts("C1")[0]["thread_ts"] == "1699999999.000001"


async def test_member_lookup_failure_fails_closed(rig: Rig) -> None:
    rig.api.fail["conversations.members"] = "missing_scope"
    await rig.sender.event(event_envelope(mention("U2", f"<@{BOT_USER}> hi"), event_id="Ev-m2"))
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    inbound = rig.handler.inbounds[0]
    assert f"slack:{TEAM}/unknown-members" in inbound.audience
    assert f"slack:{TEAM}/U2" in inbound.readers()
    assert f"slack:{TEAM}/U1" not in inbound.audience


async def test_slack_connect_members_get_their_home_team(rig: Rig) -> None:
    rig.api.members["C9"] = ["U1", "UEXT"]
    rig.api.user_teams["UEXT"] = "T2"
    envelope = event_envelope(
        mention("UEXT", f"<@{BOT_USER}> hello", channel="C9", user_team="T2"),
        event_id="Ev-ext",
        ext_shared=True,
    )
    await rig.sender.event(envelope)
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    inbound = rig.handler.inbounds[0]
    assert inbound.sender == "slack:T2/UEXT"
    assert set(inbound.audience) == {"slack:T2/UEXT", f"slack:{TEAM}/U1"}


# ------------------------------------------------------------------ dedup


async def test_retry_is_answered_once_even_after_restart(rig: Rig) -> None:
    envelope = _dm("once please", "Ev-retry")
    assert (await rig.sender.event(envelope))[0] == 200
    await wait_for(lambda: len(rig.api.posts("D1")) == 1)
    assert (await rig.sender.event(envelope, retry_num=1))[0] == 200
    await rig.sentinel("after-retry")

    await rig.connector.stop()
    rig.connector = rig.new_connector()
    await rig.connector.start()
    assert (await rig.sender.event(envelope, retry_num=2))[0] == 200
    await rig.sentinel("after-restart")

    assert rig.handler.texts() == ["once please", "after-retry", "after-restart"]
    assert len(rig.api.posts("D1")) == 1


async def test_concurrent_duplicates_are_answered_once(rig: Rig) -> None:
    envelope = _dm("twice at once", "Ev-dup")
    results = await asyncio.gather(*(rig.sender.event(envelope, retry_num=n) for n in (None, 1, 2)))
    assert [status for status, _ in results] == [200, 200, 200]
    await rig.sentinel("after-dup")
    assert rig.handler.texts().count("twice at once") == 1
    assert len(rig.api.posts("D1")) == 1


# ------------------------------------------------------------------ commands and buttons


async def test_slash_command_forwards_and_replies_ephemerally(rig: Rig) -> None:
    status, text = await rig.sender.command("allow f1 to tom", user="U1", channel="C1")
    assert status == 200
    assert text == ""
    await wait_for(lambda: len(rig.api.calls_to("chat.postEphemeral")) == 1)
    (inbound,) = rig.handler.inbounds
    assert inbound.text == "/allow f1 to tom"
    assert inbound.sender == f"slack:{TEAM}/U1"
    assert inbound.chat_kind == "direct"
    assert inbound.chat_id == "C1"
    eph = rig.api.calls_to("chat.postEphemeral")[0].params
    assert eph["channel"] == "C1"
    assert eph["user"] == "U1"
    assert eph["text"] == "echo: /allow f1 to tom"
    # postEphemeral has no mrkdwn switch: the text is shown from a plain-text block
    assert [b["text"] for b in eph["blocks"]] == [{"type": "plain_text", "text": eph["text"], "emoji": False}]
    assert rig.api.posts() == []


async def test_empty_slash_command_is_help(rig: Rig) -> None:
    await rig.sender.command("", user="U2")
    await wait_for(lambda: len(rig.handler.inbounds) == 1)
    assert rig.handler.texts() == ["/help"]


async def test_ephemeral_failure_falls_back_to_response_url(rig: Rig) -> None:
    rig.api.fail["chat.postEphemeral"] = "channel_not_found"
    await rig.sender.command("audit", user="U1", response_url=rig.api.response_url("cmd1"))
    await wait_for(lambda: len(rig.api.responses) == 1)
    resp = rig.api.responses[0]
    assert resp["name"] == "cmd1"
    assert resp["text"] == "echo: /audit"
    assert resp["response_type"] == "ephemeral"


async def test_outbound_actions_render_as_buttons(rig: Rig) -> None:
    actions = (Action("Approve", "/approve 7"), Action("Reject", "/reject 7"))
    note = "Held reply #7: *free* money at <https://evil.example|your bank> https://evil.example"
    rig.handler.reply = lambda i: Outbound(text=note, actions=actions)
    await rig.sender.event(_dm("pending?", "Ev-act", user=OWNER, channel="DOWN"))
    await wait_for(lambda: len(rig.api.posts("DOWN")) == 1)
    post = rig.api.posts("DOWN")[0]
    # issue 38: no markup, no link made of it, no unfurled preview (a note quotes a contact)
    assert (post["mrkdwn"], post["unfurl_links"], post["unfurl_media"]) == (False, False, False)
    blocks = post["blocks"]
    assert blocks[0] == {"type": "section", "text": {"type": "plain_text", "text": note, "emoji": False}}
    assert blocks[1]["type"] == "actions"
    buttons = blocks[1]["elements"]
    assert [(b["action_id"], b["value"], b["text"]["text"]) for b in buttons] == [
        ("epmem_action_0", "/approve 7", "Approve"),
        ("epmem_action_1", "/reject 7", "Reject"),
    ]


def test_build_blocks_limits() -> None:
    many = tuple(Action(f"a{i}", f"/c {i}") for i in range(30))
    blocks = build_blocks("t" * 3500, (*many, Action("x" * 100, "/ok"), Action("big", "/" + "y" * 2500)))
    kinds = [b["type"] for b in blocks]
    assert kinds == ["section", "section", "actions", "actions"]
    buttons = blocks[2]["elements"] + blocks[3]["elements"]
    assert len(buttons) == 31  # the over-long command is dropped, not cut
    assert len({b["action_id"] for b in buttons}) == 31
    assert len(buttons[-1]["text"]["text"]) == 75


#: a note about three events, each with its own four buttons (bot/consultations/wording.py).
GROUPED = tuple(
    Action(f"{n}. {label}", f"/consult c{n} {key}", group=n)
    for n in (1, 2, 3)
    for label, key in (
        ("Tell Ana", "tell"),
        ("Tell people like Ana", "like"),
        ("Who may know", "who"),
        ("Keep private", "private"),
    )
)


async def test_a_note_about_several_events_has_one_actions_block_per_event(rig: Rig) -> None:
    rig.handler.reply = lambda i: Outbound(text="Ana asked ...", to_owner="Ana asked: [1 of 3] ...", actions=GROUPED)
    await rig.sender.event(_dm("news?", "Ev-groups", user="U1", channel="D1"))
    await wait_for(lambda: len(rig.api.posts(f"D{OWNER}")) == 1)
    blocks = rig.api.posts(f"D{OWNER}")[0]["blocks"]
    assert [b["type"] for b in blocks] == ["section", "actions", "actions", "actions"]
    for n, block in enumerate(blocks[1:], 1):
        assert [b["value"] for b in block["elements"]] == [
            f"/consult c{n} {k}" for k in ("tell", "like", "who", "private")
        ]
    ids = [b["action_id"] for block in blocks[1:] for b in block["elements"]]
    assert len(set(ids)) == 12


def test_build_blocks_splits_a_group_past_the_block_limit() -> None:
    blocks = build_blocks("t", tuple(Action(f"a{i}", f"/c {i}", group=1 + i // 30) for i in range(60)))
    assert [len(b["elements"]) for b in blocks if b["type"] == "actions"] == [25, 5, 25, 5]


async def test_block_action_click_becomes_command(rig: Rig) -> None:
    status, _ = await rig.sender.block_action("/approve 7", user=OWNER, channel="DOWN")
    assert status == 200
    await wait_for(lambda: len(rig.api.posts("DOWN")) == 1)
    (inbound,) = rig.handler.inbounds
    assert inbound.text == "/approve 7"
    assert inbound.sender == f"slack:{TEAM}/{OWNER}"
    assert inbound.chat_id == "DOWN"
    assert inbound.chat_kind == "direct"
    assert rig.api.posts("DOWN")[0]["text"] == "echo: /approve 7"


async def test_foreign_action_ids_are_not_forwarded(rig: Rig) -> None:
    status, _ = await rig.sender.block_action("/approve 7", user="U1", action_id="someone_else")
    assert status == 404  # Bolt: no listener for it
    await rig.sentinel("after-foreign")
    assert rig.handler.texts() == ["after-foreign"]


async def test_to_owner_goes_to_owner_dm_with_buttons(rig: Rig) -> None:
    actions = (Action("Approve", "/approve 9"),)
    rig.handler.reply = lambda i: Outbound(
        text="Let me check with them.", to_owner="U1 asked about Anna; draft held", actions=actions
    )
    await rig.sender.event(_dm("is Anna ill?", "Ev-owner", user="U1", channel="D1"))
    await wait_for(lambda: len(rig.api.posts(f"D{OWNER}")) == 1)
    opened = rig.api.calls_to("conversations.open")
    assert [c.params["users"] for c in opened] == [OWNER]
    owner_post = rig.api.posts(f"D{OWNER}")[0]
    assert owner_post["text"] == "U1 asked about Anna; draft held"
    assert owner_post["blocks"][1]["elements"][0]["value"] == "/approve 9"
    reply = rig.api.posts("D1")[0]
    assert reply["text"] == "Let me check with them."
    assert "blocks" not in reply  # the asker never gets the owner's buttons


async def test_send_posts_and_reaches_identities(rig: Rig) -> None:
    await rig.connector.send("C1", "daily digest")
    await rig.connector.send(f"slack:{TEAM}/U3", "approved answer", (Action("Undo", "/revoke 1"),))
    assert rig.api.posts("C1")[0]["text"] == "daily digest"
    dm = rig.api.posts("DU3")[0]
    assert dm["text"] == "approved answer"
    assert dm["blocks"][1]["elements"][0]["value"] == "/revoke 1"


# ------------------------------------------------------------------ socket mode


async def test_socket_mode_roundtrip(st: OpenState) -> None:
    api = FakeSlackApi()
    await api.start()
    handler = RecordingHandler()
    config = SlackConfig("xoxb-test-token", app_token="xapp-test-token", api_url=api.api_url)
    connector = SlackConnector(config, handler, state=st.state)
    try:
        await connector.start()
        assert api.socket_connected
        assert connector.port is None  # nothing listens on HTTP in Socket Mode
        opened = api.calls_to("apps.connections.open")
        assert [c.token for c in opened] == ["xapp-test-token"]
        envelope = _dm("over the socket", "Ev-sock")
        await api.socket_send(envelope, envelope_id="env-1")
        await wait_for(lambda: len(api.posts("D1")) == 1)
        assert handler.inbounds[0].sender == f"slack:{TEAM}/U1"
        await wait_for(lambda: any(a.get("envelope_id") == "env-1" for a in api.socket_acks))
        # Socket Mode redelivers without retry headers; the event id still dedups it
        await api.socket_send(envelope, envelope_id="env-2", retry_attempt=1)
        await wait_for(lambda: any(a.get("envelope_id") == "env-2" for a in api.socket_acks))
        await connector.drain()
        assert len(api.posts("D1")) == 1
    finally:
        await connector.stop()
        await connector.stop()
        await api.stop()


# ------------------------------------------------------------------ robustness


async def test_handler_error_does_not_stop_the_connector(rig: Rig) -> None:
    def reply(inbound: Inbound) -> Outbound:
        if inbound.text == "boom":
            raise RuntimeError("agent exploded")
        return Outbound(text=f"echo: {inbound.text}")

    rig.handler.reply = reply
    status, _ = await rig.sender.event(_dm("boom", "Ev-boom"))
    assert status == 200
    await rig.sentinel("after-boom")
    assert rig.handler.texts() == ["boom", "after-boom"]
    assert rig.api.posts("D1") == []


async def test_silent_outbound_posts_nothing(rig: Rig) -> None:
    rig.handler.reply = lambda i: Outbound(text=None) if i.text == "hush" else Outbound(text=f"echo: {i.text}")
    await rig.sender.event(_dm("hush", "Ev-hush"))
    await rig.sentinel("after-hush")
    assert rig.handler.texts() == ["hush", "after-hush"]
    assert rig.api.posts("D1") == []
    assert rig.api.calls_to("chat.postEphemeral") == []


async def test_failed_post_is_survived(rig: Rig) -> None:
    rig.api.fail["chat.postMessage"] = "channel_not_found"
    await rig.sender.event(_dm("first", "Ev-pf1"))
    await wait_for(lambda: len(rig.api.calls_to("chat.postMessage")) == 1)
    await rig.connector.drain()
    del rig.api.fail["chat.postMessage"]
    await rig.sentinel("after-post-failure")
    assert rig.handler.texts() == ["first", "after-post-failure"]
