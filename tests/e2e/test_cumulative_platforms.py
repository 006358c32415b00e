"""The composite rule across replies on Telegram and Slack, end to end (issue 23's two cases).

Leo asks about the house, then about money from work, in two messages: once the owner has
linked the house, the bonus and the deposit into one matter (/matter, sent on the platform),
the second reply holds the bonus back because of the first. Priya, on the quick start's data,
asks about knee surgery and the app launch in one message and hears both (unrelated facts, with
EPMEM_COMPOSITE_SCOPE=matter: one reply judged matter by matter).
The services start from the environment as ``epmem run`` would; the fakes are loopback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.commands import CommandContext
from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from epmem.reply.respond import deflection
from testkit.fake_slack import FakeSlackApi, SlackSender, event_envelope, im_message, wait_for
from testkit.fake_telegram import FakeTelegram
from testkit.house import HOUSE_Q, OWNER_NAME, OWNER_SLACK, OWNER_TG, SLACK, TG, TRUTH, house_runtime
from testkit.runtime import ask
from testkit.quickstart import KNEE, KNEE_AND_LAUNCH_Q, LAUNCH, PRIYA_SLACK, PRIYA_TG, quickstart_runtime

MONEY_Q = "Did Maya get any money from work recently?"
LINK = "matter e-house e-bonus e-deposit"
SECRET = "e2e-signing-secret"
Opener = Callable[[Path], Awaitable[Runtime]]


async def quickstart_by_matter(data_dir: Path) -> Runtime:
    return await quickstart_runtime(data_dir, composite_scope="matter")


async def held_because_of(runtime: Runtime, first: str) -> None:
    """The last reply held f3 back because of the reply ``first`` told f1 in (audit, /why)."""
    record = (await runtime.audit.records(kind="reply"))[-1]
    assert record.body["disclosed"] == []
    assert {"fact": "f1", "record": first} in record.body["held_back"][0]["earlier"]
    why = await runtime.agent.commands.run(f"/why {record.id}", runtime.owner, _owner_ctx(runtime))
    assert f"in reply {first}" in why


def _owner_ctx(runtime: Runtime) -> CommandContext:
    inbound = ask("owner", "/why")
    return CommandContext(inbound, runtime.agent.directory.resolve(inbound.sender))


async def stop_all(started: list[tuple[Service, Runtime]]) -> None:
    for service, runtime in started:
        await service.stop()
        await runtime.close()


# ---------------------------------------------------------------------------- Telegram


@pytest_asyncio.fixture
async def telegram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[[Opener], Any]]:
    started: list[tuple[Service, Runtime]] = []
    async with FakeTelegram() as tg:
        for name, value in tg.service_env().items():
            monkeypatch.setenv(name, value)

        async def start(opener: Opener) -> tuple[FakeTelegram, Runtime]:
            runtime = await opener(tmp_path / "data")
            service = Service(runtime, PlatformSettings())
            started.append((service, runtime))
            await service.start()
            return tg, runtime

        try:
            yield start
        finally:
            await stop_all(started)


def _to(tg: FakeTelegram, chat: int) -> list[str]:
    return [s["text"] for s in tg.sent if s["chat_id"] == chat]


async def test_telegram_leo_asked_in_two_questions(telegram: Callable[[Opener], Any]) -> None:
    tg, runtime = await telegram(house_runtime)
    owner, leo = FakeTelegram.user(OWNER_TG, "Maya"), FakeTelegram.user(TG["leo"], "Leo")
    tg.private_text(owner, "/" + LINK)
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) >= 1)
    assert "One matter now" in _to(tg, OWNER_TG)[0]
    tg.private_text(leo, HOUSE_Q)
    await tg.wait_for(lambda: len(_to(tg, TG["leo"])) >= 1)
    tg.private_text(leo, MONEY_Q)
    await tg.wait_for(lambda: len(_to(tg, TG["leo"])) >= 2)
    first, second = _to(tg, TG["leo"])
    assert TRUTH in first and second == deflection(OWNER_NAME)
    replies = await runtime.audit.records(kind="reply")
    await held_because_of(runtime, replies[0].id)


async def test_telegram_priya_hears_knee_surgery_and_the_launch(telegram: Callable[[Opener], Any]) -> None:
    tg, _ = await telegram(quickstart_by_matter)
    tg.private_text(FakeTelegram.user(PRIYA_TG, "Priya"), KNEE_AND_LAUNCH_Q)
    await tg.wait_for(lambda: len(_to(tg, PRIYA_TG)) >= 1)
    [reply] = _to(tg, PRIYA_TG)
    assert KNEE in reply and LAUNCH in reply


# ---------------------------------------------------------------------------- Slack


@pytest_asyncio.fixture
async def slack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[[Opener], Any]]:
    api = FakeSlackApi(members={})
    await api.start()
    for name, value in api.service_env("xoxb-e2e", SECRET).items():
        monkeypatch.setenv(name, value)
    started: list[tuple[Service, Runtime]] = []

    async def start(opener: Opener) -> tuple[FakeSlackApi, SlackSender, Runtime]:
        runtime = await opener(tmp_path / "data")
        service = Service(runtime, PlatformSettings())
        started.append((service, runtime))
        await service.start()
        [connector] = service.connectors
        return api, SlackSender(SECRET, lambda: connector.port), runtime  # type: ignore[attr-defined]

    try:
        yield start
    finally:
        await stop_all(started)
        await api.stop()


def dm(user: str, text: str, event_id: str) -> dict[str, object]:
    return event_envelope(im_message(user, text, channel=f"D{user}"), event_id=event_id)


async def test_slack_leo_asked_in_two_questions(slack: Callable[[Opener], Any]) -> None:
    api, sender, runtime = await slack(house_runtime)
    leo = SLACK["leo"]
    assert (await sender.command(LINK, user=OWNER_SLACK))[0] == 200
    await wait_for(lambda: any(c.params["user"] == OWNER_SLACK for c in api.calls_to("chat.postEphemeral")))
    await sender.event(dm(leo, HOUSE_Q, "Ev-c1"))
    await wait_for(lambda: len(api.posts(f"D{leo}")) == 1)
    await sender.event(dm(leo, MONEY_Q, "Ev-c2"))
    await wait_for(lambda: len(api.posts(f"D{leo}")) == 2)
    first, second = (p["text"] for p in api.posts(f"D{leo}"))
    assert TRUTH in first and second == deflection(OWNER_NAME)
    replies = await runtime.audit.records(kind="reply")
    await held_because_of(runtime, replies[0].id)


async def test_slack_priya_hears_knee_surgery_and_the_launch(slack: Callable[[Opener], Any]) -> None:
    api, sender, _ = await slack(quickstart_by_matter)
    await sender.event(dm(PRIYA_SLACK, KNEE_AND_LAUNCH_Q, "Ev-p1"))
    await wait_for(lambda: len(api.posts(f"D{PRIYA_SLACK}")) == 1)
    [reply] = [p["text"] for p in api.posts(f"D{PRIYA_SLACK}")]
    assert KNEE in reply and LAUNCH in reply
