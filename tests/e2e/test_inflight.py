"""A reply in flight when ``epmem run`` is killed (bot/inflight.py): on Telegram kept for the
owner, never sent twice (the real process, ``kill -9``, the loopback Bot API); on Slack, whose
history the bot may read, sent once or recorded as delivered.

Leo asks; the bot decides and audits its reply and sends it; the platform takes the message but
its answer is held, and the process is killed before it hears back. At the next start the reply
has no outcome in the audit: it is kept as undelivered with an unknown outcome (possibly told),
the owner is told at once, and nothing sends it again on its own (Leo has it once).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from benchmarks.run_latency import bot_process, prepare, wait_polling
from bot.config import Settings
from bot.inflight import CHECKED_FLAG, ERROR
from bot.platforms import PlatformSettings
from bot.runtime import Runtime
from bot.serve import Service
from connectors.base import Inbound
from epmem.audit.delivery import UNKNOWN
from testkit.fake_slack import BOT_USER, FakeSlackApi
from testkit.fake_telegram import FakeTelegram
from testkit.house import HOUSE_Q, OWNER_TG, SLACK, TEAM, TG, TRUTH, house_runtime

pytestmark = pytest.mark.timeout(600)


async def test_a_reply_in_flight_at_a_kill_is_kept_for_the_owner_and_never_sent_twice(tmp_path: Path) -> None:
    env = await prepare(tmp_path)
    leo = FakeTelegram.user(TG["leo"], "Leo")
    async with FakeTelegram() as tg:

        def said_to(chat: int) -> list[str]:
            return [str(m.get("text", "")) for m in tg.sent_messages if m["chat"]["id"] == chat]

        async with bot_process(tg, env) as bot:
            await wait_polling(tg, bot, timeout=120)
            tg.hold("sendMessage")
            tg.private_text(leo, HOUSE_Q)
            await tg.wait_for(lambda: len(said_to(TG["leo"])) == 1, 30)  # taken; its answer held back
            bot.proc.kill()
            await bot.proc.wait()
        tg.late.release()  # the held answer goes to nobody: the client is gone
        async with bot_process(tg, env) as bot:
            await wait_polling(tg, bot, timeout=120)
            await tg.wait_for(lambda: any("may not have gone out" in t for t in said_to(OWNER_TG)), 30)
            await asyncio.sleep(1.0)
            code, _ = await bot.terminate()
        assert code == 0, "\n".join(bot.lines[-20:])
        [reply] = said_to(TG["leo"])  # once: nothing sent it again
        assert TRUTH in reply
        [note] = [t for t in said_to(OWNER_TG) if "may not have gone out" in t]
        assert note.startswith("1 reply may not have gone out when I stopped: /undelivered")

    runtime = await Runtime.open(Settings(data_dir=Path(env["EPMEM_DATA_DIR"]), policy=Path(env["EPMEM_POLICY"])))
    try:
        [kept] = await runtime.connector_state.pending()
        assert (kept.error, kept.outcome, kept.chat_id, kept.text) == (ERROR, UNKNOWN, str(TG["leo"]), reply)
        decision = await runtime.audit.get(str(kept.audit_id))
        assert decision is not None and decision.kind == "reply" and decision.body["reply"] == reply
        checked, bad = await runtime.audit.verify()
        assert bad is None and checked > 0
    finally:
        await runtime.close()


@pytest.mark.parametrize("posted_before", [False, True], ids=["never-posted", "posted-before-the-crash"])
async def test_slack_says_whether_a_reply_in_flight_went_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, posted_before: bool
) -> None:
    """On Slack the bot can read what it posted: a reply left in flight that is not in the DM's
    history is sent now, once; one that is there is recorded as delivered and not sent again.
    Either way the owner has nothing to decide."""
    runtime = await house_runtime(tmp_path / "data")
    api = FakeSlackApi()
    await api.start()
    try:
        for name, value in api.service_env("xoxb-inflight", "inflight-secret", EPMEM_SEND_PACING="0").items():
            monkeypatch.setenv(name, value)
        await runtime.overlay.set_flag(CHECKED_FLAG, 0)  # an earlier start looked at everything before
        leo = f"slack:{TEAM}/{SLACK['leo']}"
        chat = f"D{SLACK['leo']}"
        inbound = Inbound("slack", chat, "direct", leo, HOUSE_Q, audience=(leo,))
        out = await runtime.agent.handle(inbound)  # decided and audited; the process "died" here
        assert out.text is not None and TRUTH in out.text and out.audit_id is not None
        if posted_before:
            api.say(chat, BOT_USER, out.text, f"{time.time():.6f}")
        service = Service(runtime, PlatformSettings())
        await service.start()
        try:
            sent = [p["text"] for p in api.posts(chat)]
            assert sent == ([] if posted_before else [out.text])  # sent once, or not again
            assert await runtime.connector_state.pending() == []
            outcomes = await runtime.audit.db.fetchall("SELECT outcome FROM delivery WHERE of = ?", (out.audit_id,))
            assert [tuple(r) for r in outcomes] == [("delivered",)]
            notes = [p["text"] for p in api.posts() if "may not have gone out" in str(p.get("text"))]
            assert notes == []
        finally:
            await service.stop()
    finally:
        await runtime.close()
        await api.stop()
