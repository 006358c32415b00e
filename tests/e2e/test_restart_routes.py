"""Restarts lose no route: a Business reply held before a restart, approved after it, still goes
out through the owner's Business connection (as the owner), not from the bot.

``epmem run``'s service is started, stopped and started again over the same data folder (a
real restart: the runtime is closed and reopened, a new connector and PTB application polls).
After the restart the fake Bot API no longer answers ``getBusinessConnection``, so the route can
only come from what the bot kept in its state database.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.platforms import PlatformSettings
from bot.serve import Service
from testkit.fake_telegram import FakeTelegram
from testkit.house import HOUSE_Q, OWNER_TG, TG, TRUTH, house_runtime, reopen

OWNER = FakeTelegram.user(OWNER_TG, "Maya")
LEO = FakeTelegram.user(TG["leo"], "Leo")


def said_to(tg: FakeTelegram, chat_id: int) -> list[str]:
    return [s["text"] for s in tg.sent if s["chat_id"] == chat_id]


async def test_a_held_business_reply_approved_after_a_restart_goes_through_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeTelegram() as tg:
        for name, value in tg.service_env(EPMEM_SEND_PACING="0").items():
            monkeypatch.setenv(name, value)
        runtime = await house_runtime(tmp_path / "data")
        service = Service(runtime, PlatformSettings())
        await service.start()
        try:
            tg.private_text(OWNER, "/approval 2")
            await tg.wait_for(lambda: len(said_to(tg, OWNER_TG)) == 1)
            tg.business_connection("bc-maya", OWNER)
            tg.business_message("bc-maya", LEO, HOUSE_Q)
            await tg.wait_for(lambda: len(said_to(tg, OWNER_TG)) == 2)
            [held] = await runtime.approvals.pending()
            assert said_to(tg, TG["leo"]) == []  # held: nothing reached Leo
        finally:
            await service.stop()

        runtime = await reopen(runtime)  # the restart: everything in memory is gone
        tg.business_connections.clear()  # and Telegram will not say which connection it was
        service = Service(runtime, PlatformSettings())
        await service.start()
        try:
            tg.private_text(OWNER, f"/approve {held.id}")
            await tg.wait_for(lambda: len(said_to(tg, TG["leo"])) == 1, timeout=10)
            [sent] = [s for s in tg.sent if s["chat_id"] == TG["leo"]]
            assert sent["business_connection_id"] == "bc-maya" and TRUTH in sent["text"]
            await tg.wait_for(lambda: len(said_to(tg, OWNER_TG)) == 3)
            assert said_to(tg, OWNER_TG)[2].startswith("Sent held reply")
        finally:
            await service.stop()
            await runtime.close()
    assert "getBusinessConnection" not in [m for m, _ in tg.calls]
