"""Slack delivery under real conditions: 429 with Retry-After, refusals, pacing, a clean start.

Signed Events API requests go into the real Bolt app; the loopback Web API answers
``chat.postMessage`` with HTTP 429 ``ratelimited`` and ``Retry-After`` (or a refusal) when told
to. Time is a :class:`~testkit.clock.FakeTimer`, so waits are virtual and the fake stamps
each call with that virtual time. The handler writes a real audit record per reply.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connectors.slack import SlackConfig, SlackConnector
from epmem.audit import POSSIBLY
from testkit.clock import FakeTimer
from testkit.fake_slack import BOT_USER, TEAM, FakeSlackApi, SlackSender, event_envelope, im_message, mention
from testkit.handler import AuditedEcho
from testkit.state import OpenState, connector_state

SECRET = "delivery-secret"
OWNER = "UOWNER"


@dataclass
class Rig:
    api: FakeSlackApi
    st: OpenState
    clock: FakeTimer
    handler: AuditedEcho
    connector: SlackConnector
    sender: SlackSender

    def post_times(self, channel: str) -> list[float]:
        return [
            t
            for (m, t), c in zip(self.api.call_times, self.api.calls)
            if m == "chat.postMessage" and c.params.get("channel") == channel
        ]


def config(api: FakeSlackApi, clock: FakeTimer, **overrides: Any) -> SlackConfig:
    return SlackConfig(
        "xoxb-delivery",
        signing_secret=SECRET,
        api_url=api.api_url,
        host="127.0.0.1",
        port=0,
        owner_identity=f"slack:{TEAM}/{OWNER}",
        timer=clock.timer,
        **overrides,
    )


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    api = FakeSlackApi(members={"C1": ["U1", "U2", BOT_USER]})
    clock = FakeTimer()
    api.clock = clock.now
    await api.start()
    async with connector_state(tmp_path) as st:
        handler = AuditedEcho(st, recipient="U1")
        connector = SlackConnector(config(api, clock), handler, state=st.state)
        await connector.start()
        try:
            yield Rig(api, st, clock, handler, connector, SlackSender(SECRET, lambda: connector.port))
        finally:
            await connector.stop()
            await api.stop()


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met")
        await asyncio.sleep(0.005)


async def dm(rig: Rig, user: str, text: str, event_id: str) -> None:
    status, _ = await rig.sender.event(event_envelope(im_message(user, text, channel=f"D{user}"), event_id=event_id))
    assert status == 200


@pytest.mark.parametrize("limited", [1, 2])
async def test_a_rate_limited_reply_is_still_delivered_exactly_once(rig: Rig, limited: int) -> None:
    rig.api.rate_limit(retry_after=1, times=limited)
    await dm(rig, "U1", "hello", "Ev-1")
    await until(lambda: len(rig.api.posts("DU1")) == 1)
    await rig.connector.drain()
    attempts = rig.post_times("DU1")
    assert len(attempts) == limited + 1  # refused ones included
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert all(1.0 <= gap <= 1.2 + 1e-9 for gap in gaps), gaps  # as long as Slack asked, plus jitter
    assert [p["text"] for p in rig.api.posts("DU1")] == ["answer to hello"]
    [delivery] = await rig.st.audit.records(kind="delivery")
    assert delivery.body == {
        "of": rig.handler.audit_ids[0],
        "platform": "slack",
        "chat": "DU1",
        "delivered": True,
        "attempts": limited + 1,
    }
    assert await rig.st.deliveries.pending() == []


async def test_a_refused_reply_is_kept_reported_and_audited(rig: Rig) -> None:
    rig.api.fail_next("chat.postMessage", "channel_not_found")
    await dm(rig, "U1", "are you there?", "Ev-2")
    await until(lambda: bool(rig.st.owner_notes))
    await rig.connector.drain()
    [kept] = await rig.st.deliveries.pending()
    assert (kept.platform, kept.chat_id, kept.kind, kept.error, kept.attempts) == (
        "slack",
        "DU1",
        "reply",
        "channel_not_found",
        1,
    )
    assert kept.text == "answer to are you there?" and kept.audit_id == rig.handler.audit_ids[0]
    [undelivered] = await rig.st.audit.records(kind="undelivered")
    assert undelivered.body["of"] == rig.handler.audit_ids[0] and undelivered.body["delivered"] is False
    [(note, actions)] = rig.st.owner_notes
    assert kept.id in note and actions[0].command == f"/resend {kept.id}"
    assert len(rig.api.calls_to("chat.postMessage")) == 1  # a refusal is not retried


async def test_a_post_that_times_out_is_not_posted_twice(tmp_path: Path) -> None:
    """Slack posts it but answers after the client's timeout: neither slack_sdk's retry nor
    the courier may post it again; it is kept as maybe delivered and the ledger says possibly."""
    api = FakeSlackApi()
    clock = FakeTimer()
    await api.start()
    try:
        async with connector_state(tmp_path) as st:
            handler = AuditedEcho(st, disclose=True, recipient="U1")
            connector = SlackConnector(config(api, clock, send_timeout_s=1), handler, state=st.state)
            await connector.start()
            try:
                api.hold("chat.postMessage")
                await SlackSender(SECRET, lambda: connector.port).event(
                    event_envelope(im_message("U1", "hello", channel="DU1"), event_id="Ev-t1")
                )
                await until(lambda: bool(st.owner_notes), timeout=10)
                await connector.drain()  # the listener is done: the courier gave up, no retry came first
                api.late.release()
                await api.late.answered_late()  # the late answer comes; nothing is posted again
                await connector.drain()
            finally:
                await connector.stop()
            assert [p["text"] for p in api.posts("DU1")] == ["answer to hello"]
            assert len(api.calls_to("chat.postMessage")) == 1
            [kept] = await st.deliveries.pending()
            assert kept.unknown and kept.error == "timeout"
            [(note, _)] = st.owner_notes
            assert "may or may not have been delivered" in note
            assert [(d.recipient, d.status) for d in await st.audit.who_knows("f1")] == [("U1", POSSIBLY)]
    finally:
        await api.stop()


async def test_a_reply_rate_limited_past_every_retry_is_kept(rig: Rig) -> None:
    rig.api.rate_limit(retry_after=2, times=4)
    await dm(rig, "U1", "hello", "Ev-3")
    await until(lambda: bool(rig.st.owner_notes))
    [kept] = await rig.st.deliveries.pending()
    assert (kept.error, kept.attempts) == ("ratelimited", 4)


async def test_server_errors_back_off_and_recover(rig: Rig) -> None:
    rig.api.fail_next("chat.postMessage", "internal_error", status=500)
    await dm(rig, "U1", "hello", "Ev-4")
    await until(lambda: len(rig.api.posts("DU1")) == 1)
    assert 0.8 <= rig.clock.sleeps[0] <= 1.2  # the first backoff: one second, with jitter


async def test_thirty_replies_to_one_channel_keep_one_per_second(rig: Rig) -> None:
    for i in range(30):
        event = mention("U1", f"<@{BOT_USER}> q{i}", ts=f"1700000100.{i:06d}")
        status, _ = await rig.sender.event(event_envelope(event, event_id=f"Ev-p{i}"))
        assert status == 200
    await until(lambda: len(rig.api.posts("C1")) == 30, timeout=20)
    times = rig.post_times("C1")
    assert min(b - a for a, b in zip(times, times[1:])) >= 1.0
    assert (times[-1] - times[0]) / 29 < 1.05  # paced, not slowed further
    # one member listing for 30 mentions: the cache holds while no membership event arrives
    assert len(rig.api.calls_to("conversations.members")) <= 2


async def test_start_is_clean_one_auth_test_and_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as ``epmem run`` has them: Bolt reads SLACK_BOT_TOKEN from the environment by itself
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-delivery")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    api = FakeSlackApi()
    await api.start()
    try:
        async with connector_state(tmp_path) as st:
            with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG):
                warnings.simplefilter("always")
                connector = SlackConnector(config(api, FakeTimer()), AuditedEcho(st, recipient="U1"), state=st.state)
                await connector.start()
                sender = SlackSender(SECRET, lambda: connector.port)
                await sender.event(event_envelope(im_message("U1", "hi", channel="DU1"), event_id="Ev-c1"))
                await until(lambda: len(api.posts("DU1")) == 1)
                await connector.stop()
        assert len(api.calls_to("auth.test")) == 1
        loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert loud == [], [r.getMessage() for r in loud]
        assert [str(w.message) for w in caught] == []
    finally:
        await api.stop()
