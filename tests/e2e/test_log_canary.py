"""No message text in any log line, from any library: ``epmem run`` at DEBUG, fed a canary.

A real ``epmem run`` subprocess logs at DEBUG (everything every library says: Bolt, slack-sdk,
python-telegram-bot, httpx, aiohttp), JSON lines on stdout, stderr merged in, through the
production logging set-up (structlog and stdlib alike). It is sent forged and genuine requests
whose text holds a canary, on both platforms: a Slack event and a slash command with a bad
signature (Bolt logs such a request with its whole body), genuine Slack DMs and commands, a
Telegram private and group message by long polling; then Telegram by webhook, with a forged
secret and a genuine one. The canary must appear in no output line, while the libraries' lines
are there (so the check could fail).
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import aiohttp

from benchmarks.run_latency import BotProcess, bot_process, prepare, slack_env, wait_polling, wait_slack
from testkit.fake_slack import FakeSlackApi, SlackSender, event_envelope, im_message, wait_for
from testkit.fake_telegram import FakeTelegram
from testkit.house import SLACK, TG

CANARY = "quokka-canary-5e1f"
QUESTION = f"Tell me about the {CANARY} plan?"
SECRET = "canary-signing-secret"
DEBUG = {"EPMEM_LOG_LEVEL": "DEBUG", "EPMEM_SEND_PACING": "0"}


def assert_no_canary(bot: BotProcess) -> list[dict[str, object]]:
    text = "\n".join(bot.lines)
    leaks = [line for line in bot.lines if CANARY in line]
    assert not leaks, leaks[:3]
    assert CANARY not in text
    return bot.records()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_no_canary_in_any_log_line_telegram_polling_and_slack(tmp_path: Path) -> None:
    env = await prepare(tmp_path)
    api = FakeSlackApi(members={"C1": [SLACK["leo"], SLACK["raj"], "UBOT"]})
    await api.start()
    try:
        async with (
            FakeTelegram() as tg,
            bot_process(tg, {**env, **DEBUG, **slack_env(api, SECRET), "EPMEM_TELEGRAM_POLL_TIMEOUT": "1"}) as bot,
        ):
            await wait_polling(tg, bot, timeout=120)
            port = await wait_slack(bot, timeout=60)
            slack = SlackSender(SECRET, lambda: port)
            leo = SLACK["leo"]
            forged = event_envelope(im_message(leo, QUESTION, channel=f"D{leo}"), event_id="Ev-forged")
            assert (await slack.event(forged, secret="not-the-secret"))[0] == 401
            assert (await slack.command(QUESTION, user=leo, secret="not-the-secret"))[0] == 401
            genuine = event_envelope(im_message(leo, QUESTION, channel=f"D{leo}"), event_id="Ev-genuine")
            assert (await slack.event(genuine))[0] == 200
            assert (await slack.command(f"preview leo {CANARY}", user=SLACK["raj"], channel="C1"))[0] == 200
            tg.private_text(FakeTelegram.user(TG["leo"], "Leo"), QUESTION)
            tg.group_message(-100500, FakeTelegram.user(TG["raj"], "Raj"), QUESTION, mention=True)
            await wait_for(lambda: bool(api.posts(f"D{leo}")), timeout=20)
            await wait_for(lambda: bool(api.calls_to("chat.postEphemeral")), timeout=20)
            await tg.wait_for(lambda: len(tg.sent) >= 2, timeout=20)
            code, _ = await bot.terminate()
        assert code == 0
        records = assert_no_canary(bot)
    finally:
        await api.stop()
    loggers = {str(r.get("logger", "")) for r in records}
    # the libraries did speak, at DEBUG, and their payload-bearing lines were cut
    assert any(name.startswith("slack_bolt") for name in loggers), sorted(loggers)
    assert any(name.startswith("slack_sdk") for name in loggers), sorted(loggers)
    assert any(name.startswith("telegram") for name in loggers), sorted(loggers)
    assert any("Invalid request signature detected" in str(r.get("event")) for r in records)
    assert any("[payload withheld]" in str(r.get("event")) for r in records)


async def test_no_canary_in_any_log_line_telegram_webhook(tmp_path: Path) -> None:
    env = await prepare(tmp_path)
    port = free_port()
    hook = f"http://127.0.0.1:{port}/tg-hook"
    webhook = {
        "EPMEM_TELEGRAM_WEBHOOK_URL": hook,
        "EPMEM_TELEGRAM_WEBHOOK_LISTEN": "127.0.0.1",
        "EPMEM_TELEGRAM_WEBHOOK_PORT": str(port),
        "EPMEM_TELEGRAM_WEBHOOK_SECRET": "hook-secret",
    }
    async with FakeTelegram() as tg, bot_process(tg, {**env, **DEBUG, **webhook}) as bot:
        await tg.wait_for(lambda: any(m == "setWebhook" for m, _ in tg.calls), timeout=120)
        update = {
            "update_id": 7,
            "message": {
                "message_id": 1,
                "date": 0,
                "text": QUESTION,
                "chat": FakeTelegram.private_chat(FakeTelegram.user(TG["leo"], "Leo")),
                "from": FakeTelegram.user(TG["leo"], "Leo"),
            },
        }
        body = json.dumps(update)
        async with aiohttp.ClientSession(trust_env=False) as session:
            for secret, expected in (("forged", 403), ("hook-secret", 200)):
                headers = {"X-Telegram-Bot-Api-Secret-Token": secret, "Content-Type": "application/json"}
                for _ in range(100):  # the webhook server may need a moment after setWebhook
                    try:
                        async with session.post(hook, data=body, headers=headers) as response:
                            assert response.status == expected
                            break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.05)
                else:
                    raise AssertionError("the webhook server never answered")
        await tg.wait_for(lambda: len(tg.sent) >= 1, timeout=20)
        code, _ = await bot.terminate()
    assert code == 0
    records = assert_no_canary(bot)
    assert any(str(r.get("logger", "")).startswith("telegram") for r in records)
