"""The delivery path itself (connectors/courier.py): pacing, retries, bounds, on a virtual clock.

The calls here are plain coroutines that fail as a platform would (a told wait, a network
error, a refusal); the courier's own code runs unchanged. The property test: whatever the
order and mix of lanes, no lane ever sees more than its rate in any window of its length.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

import aiohttp
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.state import RetryState
from telegram.error import NetworkError, TimedOut

from connectors.courier import Courier, DeliveryFailed, Lane, Pacer, Rate, RetryPolicy, DeliveryVerdict, maybe_delivered
from connectors.slack.delivery import classify as slack_classify
from connectors.slack.delivery import retry_handlers as slack_retry_handlers
from connectors.telegram.delivery import classify as telegram_classify
from testkit.clock import FakeTimer


class Told(Exception):
    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s


class Flaky(Exception):
    pass


class Refused(Exception):
    pass


def classify(exc: BaseException) -> DeliveryVerdict:
    if isinstance(exc, Told):
        return DeliveryVerdict("retry_after", "ratelimited", exc.wait_s)
    if isinstance(exc, Flaky):
        return DeliveryVerdict("transient", "flaky")
    return DeliveryVerdict("permanent", "refused")


def failing(*errors: Exception) -> tuple[Callable[[], Awaitable[str]], list[int]]:
    """A call that raises ``errors`` in turn, then succeeds; and how many times it ran."""
    queue, calls = list(errors), [0]

    async def call() -> str:
        calls[0] += 1
        if queue:
            raise queue.pop(0)
        return "ok"

    return call, calls


CHAT = [Lane("chat:1", Rate(1, 1.0))]


async def test_a_told_wait_is_waited_never_shortened_and_jittered_within_bounds() -> None:
    clock = FakeTimer()
    courier = Courier(classify, RetryPolicy(jitter=0.2), clock.timer, random.Random(7))
    call, calls = failing(Told(3.0), Told(3.0))
    result, delivered = await courier.send(CHAT, call)
    assert (result, delivered.attempts, calls[0]) == ("ok", 3, 3)
    assert len(clock.sleeps) == 2 and all(3.0 <= s <= 3.0 + 0.2 * 3.0 for s in clock.sleeps)


async def test_transient_errors_back_off_exponentially() -> None:
    clock = FakeTimer()
    courier = Courier(classify, RetryPolicy(backoff_s=1.0, jitter=0.0), clock.timer)
    call, _ = failing(Flaky(), Flaky(), Flaky())
    await courier.send(CHAT, call)
    assert clock.sleeps == [1.0, 2.0, 4.0]


async def test_refusals_are_not_retried_and_attempts_are_bounded() -> None:
    courier = Courier(classify, RetryPolicy(attempts=3), FakeTimer().timer)
    refused, calls = failing(Refused())
    with pytest.raises(DeliveryFailed) as no:
        await courier.send(CHAT, refused)
    assert (no.value.permanent, no.value.attempts, calls[0]) == (True, 1, 1)
    flaky, calls = failing(*[Flaky()] * 10)
    with pytest.raises(DeliveryFailed) as tired:
        await courier.send(CHAT, flaky)
    assert (tired.value.permanent, tired.value.attempts, calls[0]) == (False, 3, 3)


async def test_a_wait_beyond_the_bound_gives_up_at_once() -> None:
    clock = FakeTimer()
    courier = Courier(classify, RetryPolicy(max_wait_s=60), clock.timer)
    call, calls = failing(Told(3600))
    with pytest.raises(DeliveryFailed) as no:
        await courier.send(CHAT, call)
    assert calls[0] == 1 and clock.sleeps == [] and "3600" in no.value.error


async def test_a_told_wait_holds_the_chat_for_the_next_message_too() -> None:
    clock = FakeTimer()
    courier = Courier(classify, RetryPolicy(jitter=0.0), clock.timer)
    call, _ = failing(Told(5.0))
    start = clock.now()
    await courier.send(CHAT, call)
    other, _ = failing()
    await courier.send(CHAT, other)
    assert clock.now() - start >= 5.0 + 1.0  # the retry after 5 s, the next a second later


@settings(max_examples=200, deadline=None)
@given(
    plan=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.floats(0, 3)), min_size=1, max_size=40),
    a=st.tuples(st.integers(1, 5), st.floats(0.1, 10)),
    b=st.tuples(st.integers(1, 5), st.floats(0.1, 10)),
)
def test_no_lane_ever_exceeds_its_rate(
    plan: list[tuple[str, float]], a: tuple[int, float], b: tuple[int, float]
) -> None:
    clock = FakeTimer()
    pacer = Pacer(clock.timer)
    rates = {"a": Rate(*a), "b": Rate(*b)}
    shared = Lane("bot", Rate(3, 1.0))
    sent: dict[str, list[float]] = {"a": [], "b": [], "bot": []}
    for lane, gap in plan:
        clock.time += gap
        at = pacer.reserve([Lane(lane, rates[lane]), shared])
        assert at >= clock.time
        sent[lane].append(at)
        sent["bot"].append(at)
    for name, times in sent.items():
        rate = rates.get(name, shared.rate)
        ordered = sorted(times)
        assert ordered == times or name == "bot"  # a lane is served first come, first served
        for i in range(len(ordered) - rate.count):
            assert ordered[i + rate.count] - ordered[i] >= rate.per_s - 1e-9


class Late(Exception):
    """The platform may have taken it: a timeout after the request went out."""


async def test_an_ambiguous_failure_is_never_retried() -> None:
    """A post is not idempotent: after a timeout it may be there already, so it is not sent
    again; the caller learns the outcome is unknown (and keeps it as maybe delivered)."""

    def ambiguous(exc: BaseException) -> DeliveryVerdict:
        return DeliveryVerdict("ambiguous", "timeout") if isinstance(exc, Late) else classify(exc)

    courier = Courier(ambiguous, RetryPolicy(attempts=4), FakeTimer().timer)
    late, calls = failing(Flaky(), Late(), Flaky())
    with pytest.raises(DeliveryFailed) as maybe:
        await courier.send(CHAT, late)
    assert (maybe.value.unknown, maybe.value.permanent, maybe.value.attempts, calls[0]) == (True, False, 2, 2)
    assert maybe_delivered(maybe.value) and maybe_delivered(RuntimeError("anything else"))
    assert not maybe_delivered(DeliveryFailed("Forbidden", 1, permanent=True))


def _caused(exc: Exception, cause: BaseException) -> Exception:
    try:
        raise exc from cause
    except Exception as raised:
        return raised


def test_telegram_timeouts_after_sending_are_ambiguous_before_sending_transient() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/bot/sendMessage")
    read = _caused(TimedOut(), httpx.ReadTimeout("read", request=request))
    connect = _caused(TimedOut(), httpx.ConnectTimeout("connect", request=request))
    pool = _caused(TimedOut("Pool timeout"), httpx.PoolTimeout("pool"))
    assert telegram_classify(read).kind == "ambiguous"
    assert telegram_classify(TimedOut()).kind == "ambiguous"  # no cause known: fail closed
    assert telegram_classify(connect).kind == "transient" and telegram_classify(pool).kind == "transient"
    assert telegram_classify(NetworkError("reset")).kind == "transient"


def test_slack_timeouts_after_sending_are_ambiguous_before_sending_transient() -> None:
    assert slack_classify(TimeoutError()).kind == "ambiguous"
    assert slack_classify(aiohttp.SocketTimeoutError()).kind == "ambiguous"
    assert slack_classify(aiohttp.ConnectionTimeoutError()).kind == "transient"
    assert slack_classify(aiohttp.ServerDisconnectedError()).kind == "transient"
    assert slack_classify(DeliveryFailed("timeout", 1, permanent=False, unknown=True)).kind == "ambiguous"


async def test_slack_sdks_own_retry_skips_a_read_timeout() -> None:
    """slack_sdk retries connection errors by itself, and by default a read timeout is one."""
    [handler] = slack_retry_handlers()
    request = HttpRequest(method="POST", url="http://127.0.0.1/api/chat.postMessage", headers={})

    async def retried(error: Exception) -> bool:
        return await handler.can_retry_async(state=RetryState(), request=request, error=error)

    assert not await retried(aiohttp.SocketTimeoutError())
    assert await retried(aiohttp.ConnectionTimeoutError()) and await retried(aiohttp.ServerDisconnectedError())
