"""Replies left without an outcome (bot/inflight.py): looked at once, from the first start on;
kept for the owner where the platform cannot say whether they went out."""

from __future__ import annotations

import io
from pathlib import Path

from connectors.console import ConsoleConnector

from bot.inflight import CHECKED_FLAG, InFlight, keep_replies_in_flight
from testkit.house import HOUSE_Q, house_runtime
from testkit.runtime import ask


async def test_a_data_folder_seen_first_starts_from_its_end_and_each_reply_is_looked_at_once(tmp_path: Path) -> None:
    runtime = await house_runtime(tmp_path / "data")
    console = ConsoleConnector("console:owner", runtime.agent.handle, stdin=io.StringIO(), stdout=io.StringIO())
    try:
        await runtime.agent.handle(ask("leo", HOUSE_Q))  # an older reply, no delivery reported
        assert await keep_replies_in_flight(runtime, {"console": console}) == InFlight()  # first start
        assert isinstance(await runtime.overlay.get_flag(CHECKED_FLAG), int)
        await runtime.agent.handle(ask("ana", HOUSE_Q))  # left in flight on a platform not served now
        assert await keep_replies_in_flight(runtime, {}) == InFlight()
        await runtime.agent.handle(ask("leo", HOUSE_Q))  # left in flight here
        assert await keep_replies_in_flight(runtime, {"console": console}) == InFlight(kept=1)
        assert await keep_replies_in_flight(runtime, {"console": console}) == InFlight()  # looked at once
        [kept] = await runtime.connector_state.pending()
        assert kept.contact == "leo" and kept.outcome == "unknown"
    finally:
        await runtime.close()
