"""Both platforms at once, as ``epmem run`` starts them when both are configured.

The owner here is on Telegram only (no Slack identity), which is the interesting case: notes
for the owner raised on Slack (a held reply, a probing alert) must reach the owner on Telegram,
and an approval pressed on Telegram must send the held reply back into Slack.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from connectors.slack import SlackConnector
from epmem.policy.model import Policy
from testkit.fake_slack import BOT_USER, FakeSlackApi, SlackSender, event_envelope, im_message, wait_for
from testkit.fake_telegram import FakeTelegram
from testkit.house import HOUSE_Q, OWNER_TG, SLACK, TRUTH, house_policy, house_runtime

SECRET = "svc-secret"
OWNER = FakeTelegram.user(OWNER_TG, "Maya")


@dataclass
class Both:
    tg: FakeTelegram
    api: FakeSlackApi
    runtime: Runtime
    service: Service
    slack: SlackSender

    def to_owner(self) -> list[dict[str, Any]]:
        return [s for s in self.tg.sent if s["chat_id"] == OWNER_TG]


def telegram_owner_only() -> Policy:
    data = house_policy().model_dump(mode="json")
    data["owner"]["identities"] = [f"telegram:{OWNER_TG}"]
    return Policy.model_validate(data)


@pytest_asyncio.fixture
async def both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Both]:
    api = FakeSlackApi(members={"C1": [SLACK["leo"], BOT_USER]})
    await api.start()
    async with FakeTelegram() as tg:
        slack_env = {
            "SLACK_BOT_TOKEN": "xoxb-svc",
            "SLACK_SIGNING_SECRET": SECRET,
            "EPMEM_SLACK_API_URL": api.api_url,
            "EPMEM_SLACK_PORT": "0",
            "EPMEM_SLACK_HOST": "127.0.0.1",
        }
        for name, value in tg.service_env(**slack_env).items():
            monkeypatch.setenv(name, value)
        runtime = await house_runtime(tmp_path / "data", policy=telegram_owner_only(), deflection_alert=2)
        service = Service(runtime, PlatformSettings())
        try:
            await service.start()
            slack = next(c for c in service.connectors if isinstance(c, SlackConnector))
            yield Both(tg, api, runtime, service, SlackSender(SECRET, lambda: slack.port))
        finally:
            await service.stop()
            await runtime.close()
    await api.stop()


async def test_every_configured_platform_is_started(both: Both) -> None:
    assert both.service.platforms == ["telegram", "slack"]
    assert set(both.runtime.outbox.platforms) == {"telegram", "slack"}


async def test_slack_hold_reaches_the_owner_on_telegram_and_approval_goes_back_to_slack(both: Both) -> None:
    both.tg.private_text(OWNER, "/approval 2")
    await both.tg.wait_for(lambda: len(both.to_owner()) == 1)
    leo = SLACK["leo"]
    await both.slack.event(event_envelope(im_message(leo, HOUSE_Q, channel=f"D{leo}"), event_id="Ev-h1"))
    await both.tg.wait_for(lambda: len(both.to_owner()) == 2)
    note = both.to_owner()[1]
    assert note["text"].startswith("Held reply ") and "(slack, direct chat" in note["text"]
    approve = note["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    message = next(m for m in both.tg.sent_messages if m["text"] == note["text"])
    both.tg.callback_query(OWNER, message, approve)
    await wait_for(lambda: bool(both.api.posts(f"D{leo}")))
    assert TRUTH in both.api.posts(f"D{leo}")[0]["text"]


async def test_probing_on_slack_is_reported_on_telegram(both: Both) -> None:
    for n, question in enumerate(["Did Maya get a bonus?", "What is her salary?"]):
        event = im_message("USTRANGER", question, channel="DX", ts=f"1700000100.00010{n}")
        await both.slack.event(event_envelope(event, event_id=f"Ev-p{n}"))
    await both.tg.wait_for(lambda: len(both.to_owner()) == 1)
    assert "slack:T1/USTRANGER (slack): 2, latest" in both.to_owner()[0]["text"]  # a stranger: a batch (bot/headsup.py)
    await wait_for(lambda: len(both.api.posts("DX")) == 2)  # the replies went out as usual


async def test_digest_is_delivered_to_the_owner(both: Both) -> None:
    leo = SLACK["leo"]
    await both.slack.event(event_envelope(im_message(leo, HOUSE_Q, channel=f"D{leo}"), event_id="Ev-d1"))
    await wait_for(lambda: bool(both.api.posts(f"D{leo}")))
    [digest] = await both.runtime.tasks.pending("digest")
    later = max(digest.due_at, datetime.now(timezone.utc)) + timedelta(seconds=1)
    await both.service.scheduler.run_due(later)
    await both.tg.wait_for(lambda: len(both.to_owner()) == 1)
    text = both.to_owner()[0]["text"]
    assert text.startswith("Daily digest") and f"leo asked: {HOUSE_Q}" in text
