"""A reply in flight when ``epmem run`` is killed (bot/inflight.py): kept for the owner, never
sent twice. The real process, ``kill -9``, the loopback Bot API.

Leo asks; the bot decides and audits its reply and sends it; the platform takes the message but
its answer is held, and the process is killed before it hears back. At the next start the reply
has no outcome in the audit: it is kept as undelivered with an unknown outcome (possibly told),
the owner is told at once, and nothing sends it again on its own (Leo has it once).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchmarks.run_latency import bot_process, prepare, wait_polling
from bot.config import Settings
from bot.inflight import ERROR
from bot.runtime import Runtime
from epmem.audit.delivery import UNKNOWN
from testkit.fake_telegram import FakeTelegram
from testkit.house import HOUSE_Q, OWNER_TG, TG, TRUTH

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
