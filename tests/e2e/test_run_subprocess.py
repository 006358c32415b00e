"""``epmem run`` as a user starts it: a subprocess serving Telegram against a loopback Bot API.

It checks what only the real process shows: it starts from the environment alone, answers
each message quickly (loosely here; ``benchmarks/run_latency.py`` measures it), logs JSON lines
on stdout with one request id per message and without the token or message text, and stops
cleanly on SIGTERM. The process takes a few seconds to start (it loads MiniLM).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.run_latency import ask, bot_process, prepare, wait_polling
from epmem.reply.respond import deflection
from testkit.fake_telegram import FakeTelegram
from testkit.house import HOUSE_Q, OWNER_NAME, OWNER_TG, TG, TRUTH

#: loose bound per answer; the 1 s target is the benchmark's to measure, not a test's.
LOOSE_S = 3.0


async def test_epmem_run_answers_logs_json_and_stops_on_sigterm(tmp_path: Path) -> None:
    env = await prepare(tmp_path)
    async with FakeTelegram() as fake, bot_process(fake, env) as bot:
        await wait_polling(fake, bot, timeout=90)
        leo_s, leo = await ask(fake, TG["leo"], HOUSE_Q)
        stranger_s, stranger = await ask(fake, 4242, "Did Maya get any money from work recently?")
        owner_s, owner = await ask(fake, OWNER_TG, "/allow f1 to raj")
        assert TRUTH in leo
        assert stranger == deflection(OWNER_NAME)
        assert owner.startswith("Exception 1: allow raj on fact f1")
        assert max(leo_s, stranger_s, owner_s) < LOOSE_S, (leo_s, stranger_s, owner_s)
        code, _ = await bot.terminate()
    assert code == 0, "\n".join(bot.lines[-20:])

    records = bot.records()
    # every stdout line is JSON; the one other line is stderr's (bot_process merges it): what next
    unparsed = [r for r in records if "unparsed" in r]
    assert records and unparsed == [{"unparsed": "stopped; start again with: epmem run"}], unparsed[:3]
    events = [r.get("event") for r in records]
    assert "service.started" in events and "service.stopped" in events
    # PTB's own (stdlib) log lines come through the same JSON renderer
    assert any(r.get("logger", "").startswith("telegram.ext") for r in records), "library logs missing"
    # one request id per message, shared by the connector's and the agent's lines
    replied = [r for r in records if r.get("event") == "replied"]
    inbound = [r for r in records if r.get("event") == "inbound"]
    assert len(replied) == 2 and len(inbound) == 3
    ids = [r["request_id"] for r in inbound]
    assert len(set(ids)) == 3 and {r["request_id"] for r in replied} <= set(ids)
    assert all(r.get("update_id") is not None for r in inbound)
    # never the token, never a message body
    text = "\n".join(bot.lines)
    assert fake.token not in text and fake.token.split(":")[1] not in text
    assert HOUSE_Q not in text and TRUTH not in text
