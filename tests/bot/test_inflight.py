"""Replies left without an outcome (bot/inflight.py): looked at once, from the first start on."""

from __future__ import annotations

from pathlib import Path

from bot.inflight import CHECKED_FLAG, keep_replies_in_flight
from testkit.house import HOUSE_Q, house_runtime
from testkit.runtime import ask


async def test_a_data_folder_seen_first_starts_from_its_end_and_each_reply_is_looked_at_once(tmp_path: Path) -> None:
    runtime = await house_runtime(tmp_path / "data")
    try:
        await runtime.agent.handle(ask("leo", HOUSE_Q))  # an older reply, no delivery reported
        assert await keep_replies_in_flight(runtime, ["console"]) == 0  # first start: nothing flagged
        assert isinstance(await runtime.overlay.get_flag(CHECKED_FLAG), int)
        await runtime.agent.handle(ask("leo", HOUSE_Q))  # then one left in flight
        await runtime.agent.handle(ask("ana", HOUSE_Q))  # and one on a platform not served now
        assert await keep_replies_in_flight(runtime, ["telegram"]) == 0
        await runtime.agent.handle(ask("leo", HOUSE_Q))
        assert await keep_replies_in_flight(runtime, ["console"]) == 1
        assert await keep_replies_in_flight(runtime, ["console"]) == 0  # looked at once
        [kept] = await runtime.connector_state.pending()
        assert kept.contact == "leo" and kept.outcome == "unknown"
    finally:
        await runtime.close()
