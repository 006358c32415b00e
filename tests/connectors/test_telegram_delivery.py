"""Telegram delivery under real conditions: flood control, refusals, pacing, restarts.

PTB really polls the loopback Bot API, which answers 429 with ``retry_after`` (flood control)
or a refusal when told to. Time is a :class:`~testkit.clock.FakeTimer`: every wait the
connector makes is recorded in virtual seconds, so a minute of pacing runs at once, and the
fake stamps each call with that virtual time. The handler writes a real audit record for each
reply, so the delivery records can be checked against it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from connectors.courier import DeliveryFailed
from connectors.telegram import TelegramConfig, TelegramConnector
from epmem.audit import POSSIBLY
from testkit.clock import FakeTimer
from testkit.fake_telegram import FakeTelegram
from testkit.handler import AuditedEcho
from testkit.state import OpenState, connector_state

OWNER_ID = 777
GROUP_ID = -100200
ALICE = FakeTelegram.user(42, "Alice")
BOB = FakeTelegram.user(43, "Bob")
OWNER = FakeTelegram.user(OWNER_ID, "Owner")


@pytest_asyncio.fixture
async def st(tmp_path: Path) -> AsyncIterator[OpenState]:
    async with connector_state(tmp_path) as opened:
        yield opened


@pytest.fixture
def clock(fake_telegram: FakeTelegram) -> FakeTimer:  # noqa: F811
    timer = FakeTimer()
    fake_telegram.clock = timer.now
    return timer


def config(fake: FakeTelegram, clock: FakeTimer, **overrides: Any) -> TelegramConfig:
    return TelegramConfig(
        token=fake.token, base_url=fake.base_url, owner_user_id=OWNER_ID, poll_timeout=1, timer=clock.timer, **overrides
    )


@pytest_asyncio.fixture
async def running(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,  # noqa: F811
    st: OpenState,
) -> AsyncIterator[tuple[TelegramConnector, AuditedEcho]]:
    handler = AuditedEcho(st)
    conn = TelegramConnector(config(fake_telegram, clock), handler, state=st.state)
    await conn.start()
    try:
        yield conn, handler
    finally:
        await conn.stop()


@asynccontextmanager
async def connected(cfg: TelegramConfig, handler: AuditedEcho, st: OpenState) -> AsyncIterator[TelegramConnector]:
    conn = TelegramConnector(cfg, handler, state=st.state)
    await conn.start()
    try:
        yield conn
    finally:
        await conn.stop()


async def records(st: OpenState, kind: str, n: int = 1, timeout: float = 5.0) -> list[Any]:
    """The audit records of ``kind`` once there are ``n`` (the delivery record follows the send)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(found := await st.audit.records(kind=kind)) < n:
        if loop.time() > deadline:
            raise AssertionError(f"no {n} {kind!r} audit records: {found}")
        await asyncio.sleep(0.01)
    return found


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met")
        await asyncio.sleep(0.01)


def sends(tg: FakeTelegram) -> list[float]:
    return [t for method, t in tg.call_times if method == "sendMessage"]


@pytest.mark.parametrize("floods", [1, 2])
async def test_flood_control_still_delivers_exactly_one_reply(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,
    st: OpenState,  # noqa: F811
    running: tuple[TelegramConnector, AuditedEcho],
    floods: int,
) -> None:
    tg, (_, handler) = fake_telegram, running
    tg.flood(retry_after=1, times=floods)
    tg.private_text(ALICE, "hello")
    [sent] = await tg.wait_for_sent(1)
    assert sent["text"] == "answer to hello"
    attempts = sends(tg)
    assert len(attempts) == floods + 1
    # each retry waited at least what Telegram asked, and not much more (jitter is bounded)
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert all(1.0 <= gap <= 1.0 + 0.2 + 1e-9 for gap in gaps), gaps
    [delivery] = await records(st, "delivery")
    assert delivery.body == {
        "of": handler.audit_ids[0],
        "platform": "telegram",
        "chat": "42",
        "delivered": True,
        "attempts": floods + 1,
    }
    assert await st.deliveries.pending() == []


async def test_refused_reply_is_kept_reported_and_audited(
    fake_telegram: FakeTelegram,
    st: OpenState,  # noqa: F811
    running: tuple[TelegramConnector, AuditedEcho],
) -> None:
    tg, (_, handler) = fake_telegram, running
    tg.fail("sendMessage", 403, "Forbidden: bot was blocked by the user")
    tg.private_text(ALICE, "are you there?")
    tg.private_text(BOB, "next")
    await tg.wait_for_sent(1)  # Bob's answer: Alice's was refused and not retried
    [undelivered] = await records(st, "undelivered")
    assert [s["chat_id"] for s in tg.sent] == [43]
    [kept] = await st.deliveries.pending()
    assert (kept.platform, kept.chat_id, kept.kind, kept.error, kept.attempts) == (
        "telegram",
        "42",
        "reply",
        "Forbidden",
        1,
    )
    assert kept.text == "answer to are you there?" and kept.audit_id == handler.audit_ids[0]
    assert undelivered.body["of"] == handler.audit_ids[0] and undelivered.body["delivered"] is False
    await until(lambda: bool(st.owner_notes))  # the owner is told right after
    [(note, actions)] = st.owner_notes
    assert kept.id in note and [a.command for a in actions] == [f"/resend {kept.id}"]


async def test_flood_control_past_every_retry_is_kept(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,
    st: OpenState,  # noqa: F811
    running: tuple[TelegramConnector, AuditedEcho],
) -> None:
    tg = fake_telegram
    tg.flood(retry_after=2, times=4)  # the policy's four attempts all meet flood control
    tg.private_text(ALICE, "hello")
    tg.private_text(BOB, "after")
    await records(st, "undelivered")
    [kept] = await st.deliveries.pending()
    assert (kept.error, kept.attempts, kept.chat_id) == ("retry_after", 4, "42")


async def test_a_wait_beyond_the_bound_is_not_waited(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,
    st: OpenState,  # noqa: F811
    running: tuple[TelegramConnector, AuditedEcho],
) -> None:
    tg = fake_telegram
    tg.flood(retry_after=3600)
    tg.private_text(ALICE, "hello")
    tg.private_text(BOB, "after")
    await records(st, "undelivered")
    [kept] = await st.deliveries.pending()
    assert kept.attempts == 1 and kept.error is not None and "3600" in kept.error
    assert max(clock.sleeps, default=0.0) < 60


async def test_a_send_that_times_out_is_not_retried_and_kept_as_maybe_delivered(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,
    st: OpenState,  # noqa: F811
) -> None:
    """Telegram posts the message but answers after the client's timeout: a retry would post
    it twice, so the courier stops, and the reply is kept as "unknown" (possibly read)."""
    tg = fake_telegram
    handler = AuditedEcho(st, disclose=True)
    async with connected(config(tg, clock, send_timeout_s=0.3), handler, st):
        tg.hold("sendMessage")
        tg.private_text(ALICE, "hello")
        [undelivered] = await records(st, "undelivered")  # the courier gave up: no retry came first
        await until(lambda: bool(st.owner_notes))
        tg.late.release()
        await tg.late.answered_late()  # the late answer comes; nothing is sent again
    assert [s["chat_id"] for s in tg.sent] == [42] and len(sends(tg)) == 1  # posted once, never again
    [kept] = await st.deliveries.pending()
    assert kept.unknown and (kept.error, kept.attempts) == ("TimedOut", 1)
    assert undelivered.body["outcome"] == "unknown" and undelivered.body["of"] == handler.audit_ids[0]
    [(note, _)] = st.owner_notes
    assert "may or may not have been delivered" in note
    assert [(d.recipient, d.status) for d in await st.audit.who_knows("f1")] == [("telegram:42", POSSIBLY)]


async def test_a_refused_reply_leaves_the_ledger_until_a_delivery_follows(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,
    st: OpenState,  # noqa: F811
) -> None:
    tg = fake_telegram
    handler = AuditedEcho(st, disclose=True)
    async with connected(config(tg, clock), handler, st):
        tg.fail("sendMessage", 403, "Forbidden: bot was blocked by the user")
        tg.private_text(ALICE, "are you there?")
        await records(st, "undelivered")
        assert await st.audit.who_knows("f1") == []
        tg.private_text(ALICE, "and now?")  # delivered: from its delivery record on, Alice knows
        [delivery] = await records(st, "delivery")
    [told] = await st.audit.who_knows("f1")
    assert (told.recipient, told.status, told.audit_id, told.time) == (
        "telegram:42",
        "told",
        handler.audit_ids[1],
        delivery.time,
    )


async def test_thirty_replies_in_a_group_keep_telegrams_limits(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,  # noqa: F811
    running: tuple[TelegramConnector, AuditedEcho],
) -> None:
    """About one message a second in a chat, at most 20 a minute in a group."""
    tg = fake_telegram
    for i in range(30):
        tg.group_message(GROUP_ID, ALICE, f"q{i}", mention=True)
    await tg.wait_for_sent(30, timeout=20)
    times = sends(tg)
    assert len(times) == 30
    assert min(b - a for a, b in zip(times, times[1:])) >= 1.0
    assert max(sum(1 for t in times if start <= t < start + 60.0) for start in times) <= 20
    assert [s["text"] for s in tg.sent] == [f"answer to q{i}" for i in range(30)]


async def test_thirty_replies_in_a_private_chat_one_per_second(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,  # noqa: F811
    running: tuple[TelegramConnector, AuditedEcho],
) -> None:
    tg = fake_telegram
    for i in range(30):
        tg.private_text(ALICE, f"q{i}")
    await tg.wait_for_sent(30, timeout=20)
    times = sends(tg)
    assert min(b - a for a, b in zip(times, times[1:])) >= 1.0
    assert times[-1] - times[0] < 29.0 + 1.0  # paced, not slowed further


async def test_business_route_survives_a_restart(
    fake_telegram: FakeTelegram,
    clock: FakeTimer,
    tmp_path: Path,  # noqa: F811
) -> None:
    """After a restart the connection is known from the state, not from memory or Telegram."""
    tg = fake_telegram
    async with connector_state(tmp_path) as st:
        first = TelegramConnector(config(tg, clock), AuditedEcho(st), state=st.state)
        await first.start()
        try:
            tg.business_connection("bc-1", OWNER)
            tg.business_connection("bc-off", OWNER, is_enabled=False)
            tg.business_message("bc-1", BOB, "question")
            await tg.wait_for_sent(1)
            await tg.wait_until_consumed()
        finally:
            await first.stop()
    tg.business_connections.clear()  # Telegram would not say any more: only our state knows
    async with connector_state(tmp_path) as st:
        second = TelegramConnector(config(tg, clock), AuditedEcho(st), state=st.state)
        await second.start()
        try:
            await second.send("43@bc-1", "approved answer")
            sent = await tg.wait_for_sent(2)
            assert sent[1]["business_connection_id"] == "bc-1" and sent[1]["chat_id"] == 43
            with pytest.raises(DeliveryFailed):  # the owner switched that connection off
                await second.send("43@bc-off", "must not go out")
        finally:
            await second.stop()
    assert "getBusinessConnection" not in [m for m, _ in tg.calls]
    assert len(tg.sent) == 2
