"""The whole bot over Slack Socket Mode, with the real agent.

``epmem run``'s service starts from the environment with ``SLACK_APP_TOKEN``: slack-sdk asks the
loopback Web API for a WebSocket URL (``apps.connections.open``), connects to the fake's
WebSocket, which greets with ``hello`` and then pushes ``events_api`` envelopes; the client acks
each envelope by id. Slack redelivers an envelope it thinks was lost with a new envelope id and
``retry_attempt`` > 0, and no retry headers: the event id is what dedups it.
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
from testkit.fake_slack import BOT_USER, FakeSlackApi, event_envelope, im_message, mention, wait_for
from testkit.house import HOUSE_Q, SLACK, TRUTH, house_runtime

LEO, RAJ, GRACE = SLACK["leo"], SLACK["raj"], SLACK["grace"]


@dataclass
class Bot:
    api: FakeSlackApi
    runtime: Runtime
    connector: SlackConnector

    def acked(self, envelope_id: str) -> bool:
        return any(a.get("envelope_id") == envelope_id for a in self.api.socket_acks)


@pytest_asyncio.fixture
async def bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    api = FakeSlackApi(members={"C1": [LEO, RAJ, BOT_USER]}, page_size=50)
    await api.start()
    for name, value in {
        "SLACK_BOT_TOKEN": "xoxb-socket",
        "SLACK_APP_TOKEN": "xapp-socket",
        "EPMEM_SLACK_API_URL": api.api_url,
        "EPMEM_SEND_PACING": "0",
    }.items():
        monkeypatch.setenv(name, value)
    runtime = await house_runtime(tmp_path / "data")
    service = Service(runtime, PlatformSettings())
    try:
        await service.start()
        [connector] = service.connectors
        assert isinstance(connector, SlackConnector) and connector.port is None  # no HTTP listener
        assert api.socket_connected
        yield Bot(api, runtime, connector)
    finally:
        await service.stop()
        await runtime.close()
        await api.stop()


async def test_hello_then_a_dm_and_a_mention_are_answered_end_to_end(bot: Bot) -> None:
    assert [c.token for c in bot.api.calls_to("apps.connections.open")] == ["xapp-socket"]
    dm = event_envelope(im_message(LEO, HOUSE_Q, channel=f"D{LEO}"), event_id="Ev-s1")
    await bot.api.socket_send(dm, envelope_id="env-1")
    await wait_for(lambda: bool(bot.api.posts(f"D{LEO}")), timeout=10)
    assert TRUTH in bot.api.posts(f"D{LEO}")[0]["text"]
    asked = mention(RAJ, f"<@{BOT_USER}> {HOUSE_Q}", ts="1700000300.000100")
    await bot.api.socket_send(event_envelope(asked, event_id="Ev-s2"), envelope_id="env-2")
    await wait_for(lambda: bool(bot.api.posts("C1")), timeout=10)
    [post] = bot.api.posts("C1")
    assert post["thread_ts"] == "1700000300.000100"
    await wait_for(lambda: bot.acked("env-1") and bot.acked("env-2"))
    await bot.connector.drain()
    records = await bot.runtime.audit.records(kind="reply")
    assert [r.contact for r in records] == ["leo", "raj"]
    assert sorted(records[1].body["audience"]) == ["leo", "raj"]  # the channel's members read it


async def test_a_redelivered_envelope_is_acked_and_answered_once(bot: Bot) -> None:
    dm = event_envelope(im_message(GRACE, HOUSE_Q, channel=f"D{GRACE}"), event_id="Ev-s3")
    await bot.api.socket_send(dm, envelope_id="env-3")
    await bot.api.socket_send(dm, envelope_id="env-4", retry_attempt=1)  # Slack thought env-3 was lost
    await wait_for(lambda: bot.acked("env-3") and bot.acked("env-4"))
    later = event_envelope(im_message(LEO, HOUSE_Q, channel=f"D{LEO}"), event_id="Ev-s4")
    await bot.api.socket_send(later, envelope_id="env-5")
    await wait_for(lambda: bool(bot.api.posts(f"D{LEO}")), timeout=10)
    await bot.connector.drain()
    assert len(bot.api.posts(f"D{GRACE}")) == 1
    assert len(await bot.runtime.audit.records(contact="grace")) == 1
