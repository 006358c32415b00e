"""Delivery under real conditions, measured: rate limits, refusals, pacing, on both platforms.

Each case runs the real connector against the loopback fake of its platform (PTB long-polls the
fake Bot API; signed Events API requests go into the real Bolt app, which posts to the fake Web
API), on a virtual clock (``testkit.clock.FakeTimer``): every wait the delivery path makes
is recorded in virtual seconds and the fake stamps each call with that time, so a minute of
pacing is measured exactly and runs at once. The handler writes a real audit record per reply;
the connectors' state is the bot's own (SQLite) in a temp folder.

Cases: a 429 on the first attempt, on the first two, on every attempt; a refusal (permanent);
30 replies to one chat (Telegram: a group, 20 a minute; Slack: a channel, one a second).

    .venv/bin/python -m benchmarks.platform_delivery --json benchmarks/results/platform_delivery.json
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bot.cli.common import write_json
from bot.log_setup import configure_logging
from connectors.base import Inbound, Outbound
from connectors.slack import SlackConfig, SlackConnector
from connectors.telegram import TelegramConfig, TelegramConnector
from testkit.clock import FakeTimer
from testkit.fake_slack import BOT_USER, TEAM, FakeSlackApi, SlackSender, event_envelope, im_message, mention
from testkit.fake_telegram import FakeTelegram
from testkit.state import OpenState, connector_state

SECRET = "bench-secret"
GROUP = -100900


class Audited:
    """Answers every message, with an audit record per reply as the agent writes one."""

    def __init__(self, st: OpenState) -> None:
        self.st = st

    async def __call__(self, inbound: Inbound) -> Outbound:
        record = await self.st.audit.append("reply", {"question": inbound.text, "disclosed": []})
        return Outbound(f"answer to {inbound.text}", audit_id=record.id)


async def until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError("benchmark case did not finish")
        await asyncio.sleep(0.005)


async def settled(st: OpenState, timeout: float = 30.0) -> None:
    """Until the one reply of a case was delivered or kept (and the owner told)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (await st.audit.records(kind="delivery") or st.owner_notes):
        if loop.time() > deadline:
            raise TimeoutError("benchmark case did not settle")
        await asyncio.sleep(0.005)


def pacing(times: list[float], documented: str, per_minute: int | None = None) -> dict[str, Any]:
    gaps = [b - a for a, b in zip(times, times[1:])]
    span = times[-1] - times[0]
    out: dict[str, Any] = {
        "replies": len(times),
        "documented": documented,
        "span_s": round(span, 3),
        "min_gap_s": round(min(gaps), 3),
        "observed_per_s": round((len(times) - 1) / span, 3),
    }
    if per_minute is not None:
        out["max_in_any_minute"] = max(sum(1 for t in times if s <= t < s + 60.0) for s in times)
    return out


async def outcome(st: OpenState, attempts: list[float]) -> dict[str, Any]:
    kept = await st.deliveries.pending()
    undelivered = await st.audit.records(kind="undelivered")
    delivered = await st.audit.records(kind="delivery")
    return {
        "attempts": len(attempts),
        "waits_s": [round(b - a, 3) for a, b in zip(attempts, attempts[1:])],
        "delivered": bool(delivered),
        "kept_undelivered": [k.error for k in kept],
        "audited": [r.kind for r in (*delivered, *undelivered)],
        "owner_told": len(st.owner_notes),
    }


# ------------------------------------------------------------------ Telegram


async def telegram_case(
    folder: Path, setup: Callable[[FakeTelegram], None], drive: Callable[[FakeTelegram, OpenState], Awaitable[None]]
) -> tuple[FakeTelegram, Any]:
    clock = FakeTimer()
    async with FakeTelegram() as tg, connector_state(folder) as st:
        tg.clock = clock.now
        setup(tg)
        config = TelegramConfig(
            token=tg.token, base_url=tg.base_url, owner_user_id=777, poll_timeout=1, timer=clock.timer
        )
        conn = TelegramConnector(config, Audited(st), state=st.state)
        await conn.start()
        try:
            await drive(tg, st)
            sends = [t for m, t in tg.call_times if m == "sendMessage"]
            result = await outcome(st, sends)
        finally:
            await conn.stop()
    return tg, result


async def telegram(folder: Path) -> dict[str, Any]:
    alice = FakeTelegram.user(42, "Alice")
    results: dict[str, Any] = {}

    async def one(tg: FakeTelegram, st: OpenState) -> None:
        tg.private_text(alice, "hello")
        await settled(st)

    cases: dict[str, Callable[[FakeTelegram], None]] = {
        "flood_control_first_attempt": lambda tg: tg.flood(retry_after=1, times=1),
        "flood_control_first_two_attempts": lambda tg: tg.flood(retry_after=1, times=2),
        "flood_control_every_attempt": lambda tg: tg.flood(retry_after=1, times=4),
        "refused_blocked_by_user": lambda tg: tg.fail("sendMessage", 403, "Forbidden: bot was blocked by the user"),
    }
    for i, (name, setup) in enumerate(cases.items()):
        _, results[name] = await telegram_case(folder / f"tg{i}", setup, one)

    async def thirty(tg: FakeTelegram, st: OpenState) -> None:
        for i in range(30):
            tg.group_message(GROUP, alice, f"q{i}", mention=True)
        await until(lambda: len(tg.sent) == 30, timeout=60)

    tg, _ = await telegram_case(folder / "tg-pace", lambda tg: None, thirty)
    results["thirty_replies_one_group"] = pacing(
        [t for m, t in tg.call_times if m == "sendMessage"],
        "about 1 message per second per chat; at most 20 per minute in a group",
        per_minute=20,
    )
    return results


# ------------------------------------------------------------------ Slack


async def slack_case(
    folder: Path,
    setup: Callable[[FakeSlackApi], None],
    drive: Callable[[FakeSlackApi, SlackSender, OpenState], Awaitable[None]],
) -> tuple[FakeSlackApi, Any]:
    clock = FakeTimer()
    api = FakeSlackApi(members={"C1": ["U1", "U2", BOT_USER]}, page_size=50)
    api.clock = clock.now
    await api.start()
    try:
        async with connector_state(folder) as st:
            setup(api)
            config = SlackConfig(
                "xoxb-bench",
                signing_secret=SECRET,
                api_url=api.api_url,
                host="127.0.0.1",
                port=0,
                owner_identity=f"slack:{TEAM}/UOWNER",
                timer=clock.timer,
            )
            conn = SlackConnector(config, Audited(st), state=st.state)
            await conn.start()
            try:
                await drive(api, SlackSender(SECRET, lambda: conn.port), st)
                await conn.drain()
                posts = [
                    t
                    for (m, t), c in zip(api.call_times, api.calls)
                    if m == "chat.postMessage" and c.params.get("channel") in ("DU1", "C1")
                ]
                result = await outcome(st, posts)
            finally:
                await conn.stop()
    finally:
        await api.stop()
    return api, result


async def slack(folder: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}

    async def one(api: FakeSlackApi, sender: SlackSender, st: OpenState) -> None:
        await sender.event(event_envelope(im_message("U1", "hello", channel="DU1"), event_id="Ev-1"))
        await settled(st)

    cases: dict[str, Callable[[FakeSlackApi], None]] = {
        "ratelimited_first_attempt": lambda api: api.rate_limit(retry_after=1, times=1),
        "ratelimited_first_two_attempts": lambda api: api.rate_limit(retry_after=1, times=2),
        "ratelimited_every_attempt": lambda api: api.rate_limit(retry_after=1, times=4),
        "refused_channel_not_found": lambda api: api.fail_next("chat.postMessage", "channel_not_found"),
    }
    for i, (name, setup) in enumerate(cases.items()):
        _, results[name] = await slack_case(folder / f"sl{i}", setup, one)

    async def thirty(api: FakeSlackApi, sender: SlackSender, st: OpenState) -> None:
        for i in range(30):
            event = mention("U1", f"<@{BOT_USER}> q{i}", ts=f"1700000100.{i:06d}")
            await sender.event(event_envelope(event, event_id=f"Ev-p{i}"))
        await until(lambda: len(api.posts("C1")) == 30, timeout=60)

    api, _ = await slack_case(folder / "sl-pace", lambda api: None, thirty)
    results["thirty_replies_one_channel"] = pacing(
        [t for (m, t), c in zip(api.call_times, api.calls) if m == "chat.postMessage"],
        "about 1 message per second per channel",
    )
    results["thirty_replies_one_channel"]["member_listings"] = len(api.calls_to("conversations.members"))
    return results


async def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="epmem-delivery-bench-") as tmp:
        return {
            "benchmark": "platform_delivery",
            "clock": "virtual (FakeTimer)",
            "telegram": await telegram(Path(tmp)),
            "slack": await slack(Path(tmp)),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    configure_logging("WARNING")  # stderr; stdout carries the JSON only
    result = asyncio.run(run())
    write_json(result, args.json)


if __name__ == "__main__":
    main()
