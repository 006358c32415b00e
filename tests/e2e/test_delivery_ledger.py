"""Who knows what, as delivered: the ledger and the audit page follow each reply's fate.

The whole bot on Telegram (PTB long-polls the loopback Bot API, the real agent answers from
the house example, real SQLite files). Leo may hear the truth (fact f1); the fake Bot API
refuses his reply (403, the user blocked the bot), or takes it but answers too late (a client
timeout: the message is there, the bot cannot know). The ledger (``/who-knows``, ``epmem audit
who-knows``) and the audit page's who-knows matrix, served by the real Starlette app over the
same data folder, must say: not told while undelivered, told from a successful ``/resend``,
never told after ``/discard``, and possibly told when the outcome is unknown.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from starlette.testclient import TestClient

from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from epmem.audit import POSSIBLY
from epmem.audit.web import PageConfig, create_app
from epmem.policy import Policy
from testkit.fake_telegram import FakeTelegram
from testkit.house import HOUSE_Q, OWNER_TG, TG, TRUTH, house_runtime

OWNER = FakeTelegram.user(OWNER_TG, "Maya")
LEO = FakeTelegram.user(TG["leo"], "Leo")
TOKEN = "ledger-page-token-0123456789"
BLOCKED = "Forbidden: bot was blocked by the user"


@dataclass
class Bot:
    tg: FakeTelegram
    runtime: Runtime

    def to(self, chat_id: int) -> list[str]:
        return [s["text"] for s in self.tg.sent if s["chat_id"] == chat_id]

    async def said_to(self, chat_id: int, n: int) -> list[str]:
        await self.tg.wait_for(lambda: len(self.to(chat_id)) >= n)
        return self.to(chat_id)

    async def owner_says(self, text: str) -> str:
        before = len(self.to(OWNER_TG))
        self.tg.private_text(OWNER, text)
        return (await self.said_to(OWNER_TG, before + 1))[before]

    async def who_knows(self, fact: str) -> list[tuple[str, str]]:
        return [(d.recipient, d.status) for d in await self.runtime.audit.who_knows(fact)]


@pytest_asyncio.fixture
async def bot(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    async with FakeTelegram() as tg:
        for name, value in tg.service_env(EPMEM_SEND_PACING="0", EPMEM_SEND_TIMEOUT="0.5").items():
            monkeypatch.setenv(name, value)
        runtime = await house_runtime(tmp_path / "data")
        service = Service(runtime, PlatformSettings())
        try:
            await service.start()
            yield Bot(tg, runtime)
        finally:
            await service.stop()
            await runtime.close()


def _page(runtime: Runtime, policy: Policy) -> tuple[dict[str, Any], str]:
    """The who-knows page as JSON and as HTML, from the real app on the bot's data folder."""

    async def current() -> Policy:
        return policy

    config = PageConfig(runtime.settings.audit_db, runtime.settings.state_db, current, TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(config)) as client:
        data = client.get("/who-knows", headers={**auth, "Accept": "application/json"})
        html = client.get("/who-knows", headers=auth)
    assert data.status_code == 200 and html.status_code == 200
    return data.json(), html.text


async def page_cell(bot: Bot, fact: str, reader: str) -> tuple[dict[str, Any], str]:
    """The page's cell for ``reader`` on ``fact`` (the page runs in a thread of its own, reading
    the files the running bot writes), and the page's HTML."""
    data, html = await asyncio.to_thread(_page, bot.runtime, bot.runtime.policy)
    [row] = [r for r in data["rows"] if r["id"] == fact]
    return row["cells"][reader], html


async def refused_reply(bot: Bot) -> str:
    """Leo asks; Telegram refuses the answer (403); the id it is kept under."""
    bot.tg.fail("sendMessage", 403, BLOCKED)
    bot.tg.private_text(LEO, HOUSE_Q)
    [note] = await bot.said_to(OWNER_TG, 1)
    [kept] = await bot.runtime.connector_state.pending()
    assert kept.id in note and "could not be delivered" in note and kept.facts == ("f1",)
    assert bot.to(TG["leo"]) == []
    return kept.id


async def test_a_refused_reply_tells_nobody_until_resent(bot: Bot) -> None:
    kept = await refused_reply(bot)
    [reply] = await bot.runtime.audit.records(kind="reply")
    assert reply.body["disclosed"] == ["f1"]  # decided (and audited) before it was sent
    assert await bot.who_knows("f1") == []
    assert "Nobody has been told f1" in await bot.owner_says("/who-knows f1")
    cell, _ = await page_cell(bot, "f1", "leo")
    assert cell["state"] == "may know" and cell["told_at"] is None

    assert (await bot.owner_says(f"/resend {kept}")).startswith(f"Sent {kept} to leo")
    [answer] = bot.to(TG["leo"])
    assert TRUTH in answer
    [resent] = [r for r in await bot.runtime.audit.records(kind="delivery") if r.body.get("resent") == kept]
    assert resent.body["of"] == reply.id and resent.body["delivered"] is True
    [told] = await bot.runtime.audit.who_knows("f1")
    assert (told.recipient, told.status, told.audit_id) == ("leo", "told", reply.id)
    assert told.time == resent.time > reply.time  # counts from the resend, not the decision
    assert "leo was told f1" in await bot.owner_says("/who-knows f1")
    cell, _ = await page_cell(bot, "f1", "leo")
    assert cell["state"] == "told" and cell["told_at"] == resent.time
    status = await bot.runtime.audit.verify()
    assert status[1] is None  # the outcomes are chained like every other record


async def test_a_discarded_reply_never_counts(bot: Bot) -> None:
    kept = await refused_reply(bot)
    assert await bot.owner_says(f"/discard {kept}") == f"Discarded {kept}."
    [change] = await bot.runtime.audit.records(kind="policy_change")
    [reply] = await bot.runtime.audit.records(kind="reply")
    assert change.body["of"] == reply.id and change.body["undelivered"] == kept
    assert await bot.who_knows("f1") == []
    assert await bot.who_knows("e-house") == []
    cell, _ = await page_cell(bot, "f1", "leo")
    assert cell["state"] == "may know"
    assert "no undelivered message" in await bot.owner_says(f"/resend {kept}")
    assert bot.to(TG["leo"]) == []


async def test_a_timed_out_reply_is_sent_once_and_counts_as_possibly_known(bot: Bot) -> None:
    bot.tg.hold("sendMessage")  # Telegram posts it, but answers after the timeout
    bot.tg.private_text(LEO, HOUSE_Q)
    [note] = await bot.said_to(OWNER_TG, 1)  # the courier gave up: a retry would have come first
    [kept] = await bot.runtime.connector_state.pending()
    assert kept.unknown and "may or may not have been delivered" in note and f"/discard {kept.id}" in note
    bot.tg.late.release()
    await bot.tg.late.answered_late()  # the late answer comes; nothing is sent again
    [answer] = bot.to(TG["leo"])  # exactly once: the send was not retried
    assert TRUTH in answer and [
        m for m, p in bot.tg.calls if m == "sendMessage" and str(p["chat_id"]) == str(TG["leo"])
    ] == ["sendMessage"]
    [undelivered] = await bot.runtime.audit.records(kind="undelivered")
    assert undelivered.body["outcome"] == "unknown" and undelivered.body["error"] == "TimedOut"
    assert await bot.who_knows("f1") == [("leo", POSSIBLY)]
    cell, html = await page_cell(bot, "f1", "leo")
    assert cell["state"] == "may have been told" and cell["told_at"]
    assert 'class="cell possibly"' in html
    # the owner drops it: what the platform may have shown stays possibly known
    assert "possibly read" in await bot.owner_says(f"/discard {kept.id}")
    assert await bot.who_knows("f1") == [("leo", POSSIBLY)]
    cell, _ = await page_cell(bot, "f1", "leo")
    assert cell["state"] == "may have been told"
