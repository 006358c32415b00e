"""/review on Telegram (inline keyboard) and Slack (Block Kit buttons), through the real
connectors: PTB long-polling a loopback Bot API, signed requests into the real Bolt app.

A tap changes a fact only when the owner makes it. Forged Telegram callback data and forged
Slack action payloads (the same command from anyone else) change nothing and are audited as
attempted commands.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from connectors.slack import SlackConnector
from testkit.fake_slack import FakeSlackApi, SlackSender, wait_for
from testkit.fake_telegram import FakeTelegram
from testkit.house import OWNER_SLACK, OWNER_TG, SLACK, TEAM, TG, house_runtime
from tests.bot.test_review_command import PENDING, pending

OWNER = FakeTelegram.user(OWNER_TG, "Maya")
LEO = FakeTelegram.user(TG["leo"], "Leo")
STRANGER = FakeTelegram.user(4242, "Maya Chen")
SECRET = "review-signing-secret"


def keyboard(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for row in message["reply_markup"]["inline_keyboard"] for b in row]


@pytest_asyncio.fixture
async def telegram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[FakeTelegram, Runtime]]:
    async with FakeTelegram() as tg:
        for name, value in tg.service_env().items():
            monkeypatch.setenv(name, value)
        runtime = await house_runtime(tmp_path / "data")
        await runtime.memory.add([pending(*p) for p in PENDING])
        service = Service(runtime, PlatformSettings())
        try:
            await service.start()
            yield tg, runtime
        finally:
            await service.stop()
            await runtime.close()


def _to(tg: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in tg.sent_messages if m["chat"]["id"] == chat_id]


async def test_telegram_review_is_one_tap_per_fact_and_forged_taps_change_nothing(
    telegram: tuple[FakeTelegram, Runtime],
) -> None:
    tg, runtime = telegram
    # at start the owner heard what waits (bot/serve.py); from here on, only the review's messages
    [waits] = _to(tg, OWNER_TG)
    assert waits["text"] == f"{len(PENDING)} facts wait for review: /review"
    tg.private_text(OWNER, "/review")
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) == 2)
    question = _to(tg, OWNER_TG)[1]
    fact_id = question["text"].splitlines()[1].split(":")[0]
    buttons = {b["text"]: b["callback_data"] for b in keyboard(question)}
    assert "\U0001f512 Keep private" in buttons and "\U0001f465 Who may know\u2026" in buttons
    before = await runtime.memory.get(fact_id)
    # forged: Telegram lets anyone put any callback data on a button press in their own chat
    tg.private_text(LEO, "Are you there?")
    tg.private_text(STRANGER, "Hello?")
    await tg.wait_for(lambda: len(_to(tg, TG["leo"])) == 1 and len(_to(tg, 4242)) == 1)
    tg.callback_query(LEO, _to(tg, TG["leo"])[0], buttons["\U0001f512 Keep private"])
    tg.callback_query(STRANGER, _to(tg, 4242)[0], f"/review {fact_id} who raj")
    await tg.wait_for(lambda: len(_to(tg, TG["leo"])) == 2 and len(_to(tg, 4242)) == 2)
    assert await runtime.memory.get(fact_id) == before
    assert all(fact_id not in m["text"] for m in _to(tg, TG["leo"]) + _to(tg, 4242))
    assert len(_to(tg, OWNER_TG)) == 2
    # the owner's tap applies at once and shows the next question with its own keyboard
    tg.callback_query(OWNER, question, buttons["\U0001f512 Keep private"])
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) == 3)
    after = await runtime.memory.get(fact_id)
    assert after is not None and (after.state, after.level) == ("owner-set", 0)
    nxt = _to(tg, OWNER_TG)[2]
    assert nxt["text"].startswith(f"{fact_id}: ") and "Review 2/5" in nxt["text"]
    second = nxt["text"].split("\n\n", 1)[1].splitlines()[1].split(":")[0]
    who = next(b for b in keyboard(nxt) if b["text"].startswith("\U0001f465"))
    tg.callback_query(OWNER, nxt, who["callback_data"])
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) == 4)
    picker = _to(tg, OWNER_TG)[3]
    leo = next(b for b in keyboard(picker) if b["text"] == "Leo Chen")
    tg.callback_query(OWNER, picker, leo["callback_data"])
    await tg.wait_for(lambda: len(_to(tg, OWNER_TG)) == 5)
    assert "\u2713 Leo Chen" in [b["text"] for b in keyboard(_to(tg, OWNER_TG)[4])]
    fact = await runtime.memory.get(second)
    assert fact is not None and (fact.level, fact.whitelist) == (0, ["leo"])
    kinds = [(r.kind, r.contact) for r in await runtime.audit.records()]
    assert (
        kinds.count(("attempted_command", "leo")) == 1
        and kinds.count(("attempted_command", "stranger(telegram:4242)")) == 1
    )
    changes = await runtime.audit.records(kind="policy_change")
    assert [(c.body["fact"], c.body["by"]) for c in changes] == [
        (fact_id, f"telegram:{OWNER_TG}"),
        (second, f"telegram:{OWNER_TG}"),
    ]


@pytest_asyncio.fixture
async def slack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[FakeSlackApi, SlackSender, Runtime]]:
    api = FakeSlackApi(members={})
    await api.start()
    for name, value in api.service_env("xoxb-review", SECRET).items():
        monkeypatch.setenv(name, value)
    runtime = await house_runtime(tmp_path / "data")
    await runtime.memory.add([pending(*p) for p in PENDING])
    service = Service(runtime, PlatformSettings())
    try:
        await service.start()
        [connector] = service.connectors
        assert isinstance(connector, SlackConnector)
        yield api, SlackSender(SECRET, lambda: connector.port), runtime
    finally:
        await service.stop()
        await runtime.close()
        await api.stop()


async def test_slack_review_buttons_and_forged_action_payloads(
    slack: tuple[FakeSlackApi, SlackSender, Runtime],
) -> None:
    api, sender, runtime = slack

    def answers(user: str) -> list[dict[str, Any]]:
        return [c.params for c in api.calls_to("chat.postEphemeral") if c.params["user"] == user] + [
            p for p in api.posts(f"D{user}")
        ]

    # at start the owner heard what waits (bot/serve.py); from here on, only the review's messages
    [waits] = answers(OWNER_SLACK)
    assert waits["text"] == f"{len(PENDING)} facts wait for review: /review"

    def to_owner() -> list[dict[str, Any]]:
        return [a for a in answers(OWNER_SLACK) if a != waits]

    assert (await sender.command("review", user=OWNER_SLACK, channel=f"D{OWNER_SLACK}"))[0] == 200
    await wait_for(lambda: len(to_owner()) == 1)
    [question] = to_owner()
    buttons = [e for block in question["blocks"] if block["type"] == "actions" for e in block["elements"]]
    values = {b["text"]["text"]: b["value"] for b in buttons}
    ok = next(v for label, v in values.items() if label.startswith("\u2713 "))
    fact_id = ok.split()[1]
    before = await runtime.memory.all()
    # forged: the same payload signed by Slack but clicked by Leo, and a made-up value from Raj
    await sender.block_action(ok, user=SLACK["leo"], channel=f"D{SLACK['leo']}")
    await sender.block_action(f"/review {fact_id} who raj", user=SLACK["raj"], channel=f"D{SLACK['raj']}")
    await wait_for(lambda: bool(answers(SLACK["leo"])) and bool(answers(SLACK["raj"])))
    assert await runtime.memory.all() == before
    # an unsigned (forged) payload from the owner's id is refused outright
    status, _ = await sender.block_action(ok, user=OWNER_SLACK, channel=f"D{OWNER_SLACK}", secret="not-slack")
    assert status == 401
    assert await runtime.memory.all() == before
    await sender.block_action(ok, user=OWNER_SLACK, channel=f"D{OWNER_SLACK}")
    await wait_for(lambda: len(to_owner()) == 2)
    fact = await runtime.memory.get(fact_id)
    assert fact is not None and fact.state == "owner-set"
    assert "Review 2/5" in to_owner()[1]["text"]
    [change] = await runtime.audit.records(kind="policy_change")
    assert change.body["fact"] == fact_id and change.body["by"] == f"slack:{TEAM}/{OWNER_SLACK}"
    attempts = {r.body["sender"] for r in await runtime.audit.records(kind="attempted_command")}
    assert attempts == {f"slack:{TEAM}/{SLACK['leo']}", f"slack:{TEAM}/{SLACK['raj']}"}
