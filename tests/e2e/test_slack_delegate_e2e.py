"""Slack delegate mode with the real agent: ``epmem run`` holding the owner's user token.

The service is started from the environment as ``epmem run`` would be, with ``SLACK_USER_TOKEN``
(the owner Maya's ``xoxp-`` token) and ``EPMEM_SLACK_DELEGATE_DELAY_S``. Events from the
owner's own DMs name Maya as the authorized party; replies to them are posted with her token,
under the same policy, approval mode and audit as the bot's own replies. The service runs on the
test's clock (:class:`~testkit.clock.GatedTimer`): the delegate's wait passes at once, or stays
open until the test says, so "Maya answered first" is ordered by events, not by sleeping.
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
from connectors.slack import ChatRef, SlackConnector
from testkit.clock import GatedTimer
from testkit.fake_slack import (
    BOT_USER,
    FakeSlackApi,
    SlackSender,
    channel_message,
    event_envelope,
    im_message,
    wait_for,
)
from testkit.house import HOUSE_Q, OWNER_SLACK, SLACK, TRUTH, house_runtime

SECRET = "delegate-e2e-secret"
USER_TOKEN = "xoxp-maya"
DELAY_S = 30.0  # virtual seconds on the test's clock
LEO, RAJ = SLACK["leo"], SLACK["raj"]


def owners_dm(user: str) -> str:
    """The owner's DM channel with ``user`` (not the bot's)."""
    return f"DMAYA{user}"


@dataclass
class Bot:
    api: FakeSlackApi
    runtime: Runtime
    connector: SlackConnector
    sender: SlackSender
    timer: GatedTimer
    n: int = 0

    async def dm_owner(self, user: str, text: str, ts: str) -> None:
        """``user`` writes to Maya herself (an event the app receives through her token)."""
        self.n += 1
        self.api.say(owners_dm(user), user, text, ts)
        envelope = event_envelope(
            im_message(user, text, channel=owners_dm(user), ts=ts), event_id=f"Ev-d{self.n}", authorized=OWNER_SLACK
        )
        assert (await self.sender.event(envelope))[0] == 200

    async def owner_command(self, text: str) -> str:
        before = len(self.ephemeral())
        assert (await self.sender.command(text, user=OWNER_SLACK))[0] == 200
        await wait_for(lambda: len(self.ephemeral()) > before)
        return self.ephemeral()[-1]

    def ephemeral(self) -> list[str]:
        return [c.params["text"] for c in self.api.calls_to("chat.postEphemeral") if c.params["user"] == OWNER_SLACK]

    def as_owner(self, channel: str) -> list[str]:
        return [
            c.params["text"]
            for c in self.api.calls_to("chat.postMessage")
            if c.ok and c.params["channel"] == channel and c.token == USER_TOKEN
        ]


@pytest_asyncio.fixture
async def bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    api = FakeSlackApi(
        members={"C1": [LEO, RAJ, OWNER_SLACK, BOT_USER]}, user_tokens={USER_TOKEN: OWNER_SLACK}, page_size=50
    )
    await api.start()
    for name, value in {
        "SLACK_BOT_TOKEN": "xoxb-e2e",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_USER_TOKEN": USER_TOKEN,
        "EPMEM_SLACK_DELEGATE_DELAY_S": str(DELAY_S),
        "EPMEM_SLACK_API_URL": api.api_url,
        "EPMEM_SLACK_PORT": "0",
        "EPMEM_SLACK_HOST": "127.0.0.1",
        "EPMEM_SEND_PACING": "0",
    }.items():
        monkeypatch.setenv(name, value)
    runtime = await house_runtime(tmp_path / "data")
    timer = GatedTimer(gated_s=DELAY_S)
    timer.open()  # Maya's chance to answer first passes at once, unless a test shuts the gate
    service = Service(runtime, PlatformSettings(), timer=timer.timer)
    try:
        await service.start()
        [connector] = service.connectors
        assert isinstance(connector, SlackConnector)
        yield Bot(api, runtime, connector, SlackSender(SECRET, lambda: connector.port), timer)
    finally:
        timer.open()
        await service.stop()
        await runtime.close()
        await api.stop()


async def test_a_colleagues_dm_to_the_owner_is_answered_as_the_owner(bot: Bot) -> None:
    await bot.dm_owner(LEO, HOUSE_Q, "1700000100.000100")
    await wait_for(lambda: bool(bot.as_owner(owners_dm(LEO))), timeout=10)
    [reply] = bot.as_owner(owners_dm(LEO))
    assert TRUTH in reply  # Leo may know; the answer goes out from Maya's own account
    assert bot.timer.sleeps.count(DELAY_S) == 1  # after Maya's chance to answer, as configured
    await bot.connector.drain()
    [record] = await bot.runtime.audit.records(kind="reply")
    assert record.body["delegation"] == "dm" and record.body["chat"] == f"as-owner:{owners_dm(LEO)}"
    [delivery] = await bot.runtime.audit.records(kind="delivery")
    assert delivery.body["of"] == record.id and delivery.body["delivered"] is True


async def test_held_for_approval_then_sent_as_the_owner(bot: Bot) -> None:
    assert "hold" in await bot.owner_command("delegate hold")
    await bot.dm_owner(LEO, HOUSE_Q, "1700000101.000100")
    owner_bot_dm = f"D{OWNER_SLACK}"
    await wait_for(lambda: bool(bot.api.posts(owner_bot_dm)), timeout=10)
    [note] = bot.api.posts(owner_bot_dm)
    assert note["text"].startswith("Held reply ")
    assert bot.as_owner(owners_dm(LEO)) == []  # nothing went out as Maya yet
    approve = note["blocks"][-1]["elements"][0]["value"]
    assert (await bot.sender.block_action(approve, user=OWNER_SLACK, channel=owner_bot_dm))[0] == 200
    await wait_for(lambda: bool(bot.as_owner(owners_dm(LEO))))
    assert TRUTH in bot.as_owner(owners_dm(LEO))[0]
    assert [r.kind for r in await bot.runtime.audit.records(kind="approval")] == ["approval"]
    [held] = await bot.runtime.audit.records(kind="held")
    assert held.body["delegation"] == "dm"


async def test_a_deflection_is_not_sent_as_the_owner(bot: Bot) -> None:
    """ "Sorry, I can't help with that. I'll let Maya know you asked." cannot come from Maya."""
    await bot.dm_owner("UNOBODY", "Did Maya get any money from work recently?", "1700000108.000100")
    await bot.dm_owner(LEO, HOUSE_Q, "1700000109.000100")
    await wait_for(lambda: bool(bot.as_owner(owners_dm(LEO))), timeout=10)
    await bot.connector.drain()
    assert bot.as_owner(owners_dm("UNOBODY")) == []
    [unsent] = [r for r in await bot.runtime.audit.records(kind="reply") if r.body["deflected"]]
    assert unsent.body["reply"] is None and unsent.body["unsent"] == "deflection as the owner"


async def test_a_contact_set_to_silent_gets_nothing(bot: Bot) -> None:
    assert "raj: silent" in await bot.owner_command("delegate raj silent")
    await bot.dm_owner(RAJ, HOUSE_Q, "1700000102.000100")
    await bot.dm_owner(LEO, HOUSE_Q, "1700000103.000100")
    await wait_for(lambda: bool(bot.as_owner(owners_dm(LEO))), timeout=10)
    await bot.connector.drain()
    assert bot.as_owner(owners_dm(RAJ)) == []
    [silent] = await bot.runtime.audit.records(kind="delegate_silent")
    assert silent.contact == "raj" and silent.body["reply"] is None


async def test_the_owner_typing_first_stops_the_delegate(bot: Bot) -> None:
    bot.timer.shut()
    await bot.dm_owner(LEO, HOUSE_Q, "1700000104.000100")
    await wait_for(lambda: bot.timer.waiting == 1)  # Leo's message waits out Maya's chance
    # Maya answers herself within the delay; her message event reaches the app
    envelope = event_envelope(
        im_message(OWNER_SLACK, "Going well, tell you Friday!", channel=owners_dm(LEO), ts="1700000105.000100"),
        event_id="Ev-owner",
        authorized=OWNER_SLACK,
    )
    assert (await bot.sender.event(envelope))[0] == 200
    leo = ChatRef(owners_dm(LEO), None, as_owner=True)
    await wait_for(lambda: bot.connector.watch.answered(leo, "1700000104.000100", anywhere=True))
    bot.timer.open()  # the delay is over
    await bot.connector.drain()
    assert bot.as_owner(owners_dm(LEO)) == []
    [quiet] = await bot.runtime.audit.records(kind="non_text")
    assert quiet.body["non_text"] == "owner_answered" and quiet.body["reply"] is None
    assert await bot.runtime.audit.records(kind="reply") == []  # nothing was said, nothing disclosed


async def test_mentions_of_the_owner_are_answered_only_once_turned_on(bot: Bot) -> None:
    mention = channel_message(RAJ, f"<@{OWNER_SLACK}> {HOUSE_Q}", ts="1700000106.000100")
    assert (await bot.sender.event(event_envelope(mention, event_id="Ev-m1", authorized=OWNER_SLACK)))[0] == 200
    await bot.connector.drain()
    assert bot.as_owner("C1") == []
    assert "answered" in await bot.owner_command("delegate mentions on")
    again = channel_message(RAJ, f"<@{OWNER_SLACK}> {HOUSE_Q}", ts="1700000107.000100")
    assert (await bot.sender.event(event_envelope(again, event_id="Ev-m2", authorized=OWNER_SLACK)))[0] == 200
    await wait_for(lambda: bool(bot.as_owner("C1")), timeout=10)
    await bot.connector.drain()  # the first mention's listener, long started, is done too
    [post] = [c.params for c in bot.api.calls_to("chat.postMessage") if c.token == USER_TOKEN]
    assert post["thread_ts"] == "1700000107.000100"
    [record] = await bot.runtime.audit.records(kind="reply")
    assert record.body["delegation"] == "mention" and sorted(record.body["audience"]) == ["leo", "raj"]
