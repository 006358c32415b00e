"""One way out for every message a connector sends: paced per chat, retried within bounds.

Platforms limit how fast a bot may post and answer a burst with HTTP 429 and a time to wait
(Slack's ``Retry-After`` header, Telegram's ``retry_after``). A reply dropped on the first 429
is an answer the asker never gets, so every send goes through :class:`Courier`:

* **pacing**: before each attempt a slot is reserved on every *lane* the message travels
  (a chat, a chat's per-minute budget, the bot as a whole); a lane is a :class:`Rate`, "at most
  N sends per T seconds", and slots are handed out in order, so concurrent replies to one chat
  queue instead of tripping the limit;
* **retries**: the platform's error is classified (wait as told / transient / permanent);
  a told wait holds the lane until then, plus a little jitter so many senders do not return
  at the same instant; a transient failure backs off exponentially, with jitter; a
  permanent one (no such channel, blocked by the user) is not retried; an *ambiguous* one (a
  timeout after the request may have reached the platform) is not retried either, because a
  message post is not idempotent: a retry could deliver it twice. It fails as
  :class:`DeliveryFailed` with ``unknown`` set, so the caller keeps it for the owner as
  "maybe delivered" and the audit counts it as possibly read;
* **bounds**: at most ``attempts`` tries, and a wait longer than ``max_wait_s`` is not
  waited: the caller gets :class:`DeliveryFailed` and records the message as undelivered.

Time is injected (:class:`Timer`), so tests run a minute of pacing in microseconds.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from epmem.errors import EpmemError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` sends per ``per_s`` seconds on one lane."""

    count: int
    per_s: float

    def __post_init__(self) -> None:
        if self.count < 1 or self.per_s < 0:
            raise ValueError(f"a rate needs count >= 1 and per_s >= 0, got {self.count}/{self.per_s}s")


@dataclass(frozen=True, slots=True)
class Lane:
    """A named stream of sends sharing one rate (``slack:C1``, ``telegram:-100:minute``)."""

    key: str
    rate: Rate


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try before a message is recorded as undelivered.

    ``attempts`` counts every try (4: the first and three retries). ``backoff_s`` is the first
    wait after a transient failure, doubled each time. ``jitter`` is the fraction of a wait
    added (or, for backoff, also taken away) at random; a platform's told wait is never
    shortened. A told wait beyond ``max_wait_s`` is given up at once rather than waited.
    """

    attempts: int = 4
    backoff_s: float = 1.0
    max_wait_s: float = 60.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")


@dataclass(frozen=True, slots=True)
class Timer:
    """The clock and the sleep the courier uses (monotonic seconds); tests pass a fake one."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


Kind = Literal["retry_after", "transient", "permanent", "ambiguous"]


@dataclass(frozen=True, slots=True)
class DeliveryVerdict:
    """What a failed attempt means: wait ``wait_s`` as told, back off, stop, or stop without
    knowing whether the platform took the message (``ambiguous``); ``error`` is a short code
    for logs and the undelivered record (never a message body)."""

    kind: Kind
    error: str
    wait_s: float = 0.0


class DeliveryFailed(EpmemError):
    """A message could not be delivered within the retry policy.

    ``remaining`` is the part of the text that did not go out, when a sender knows it (a long
    message sent in pieces may fail half way); None means all of it. ``unknown``: the platform
    may have received it all the same (a timeout after sending, or a message cut half way),
    so whoever reads the audit must count it as possibly delivered.
    """

    def __init__(
        self, error: str, attempts: int, *, permanent: bool, remaining: str | None = None, unknown: bool = False
    ) -> None:
        super().__init__(f"{'maybe ' if unknown else ''}not delivered after {attempts} attempt(s): {error}")
        self.error = error
        self.attempts = attempts
        self.permanent = permanent
        self.remaining = remaining
        self.unknown = unknown


def maybe_delivered(exc: BaseException) -> bool:
    """Whether a failed send may have reached its reader all the same: only a
    :class:`DeliveryFailed` that is not ``unknown`` says it did not (anything else a sender
    raises could have come after the platform took the message)."""
    return not isinstance(exc, DeliveryFailed) or exc.unknown


@dataclass(frozen=True, slots=True)
class Delivered:
    """How many attempts a delivered message took (1: the first went through)."""

    attempts: int


@dataclass
class Pacer:
    """Hands out send slots per lane so no lane exceeds its rate; slots are reserved without
    awaiting, so concurrent callers line up in the order they asked."""

    timer: Timer = field(default_factory=Timer)
    _sent: dict[str, deque[float]] = field(default_factory=dict)
    _held: dict[str, float] = field(default_factory=dict)

    def reserve(self, lanes: Sequence[Lane]) -> float:
        """The earliest time every lane allows one more send; that slot is taken."""
        at = self.timer.now()
        for lane in lanes:
            sent = self._sent.get(lane.key)
            at = max(at, self._held.get(lane.key, at))
            if sent:
                at = max(at, sent[-1])  # first come, first served on a lane
                if len(sent) >= lane.rate.count:
                    at = max(at, sent[-lane.rate.count] + lane.rate.per_s)
        for lane in lanes:
            sent = self._sent.setdefault(lane.key, deque())
            sent.append(at)
            while len(sent) > lane.rate.count:
                sent.popleft()
        return at

    def hold(self, key: str, until: float) -> None:
        """Nothing more on this lane before ``until`` (the platform asked us to wait)."""
        self._held[key] = max(self._held.get(key, until), until)

    async def wait(self, lanes: Sequence[Lane]) -> None:
        at = self.reserve(lanes)
        delay = at - self.timer.now()
        if delay > 0:
            await self.timer.sleep(delay)


class Courier:
    """Sends through a platform's call with pacing and bounded retries (see the module doc)."""

    def __init__(
        self,
        classify: Callable[[BaseException], DeliveryVerdict],
        policy: RetryPolicy | None = None,
        timer: Timer | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.classify = classify
        self.policy = policy or RetryPolicy()
        self.timer = timer or Timer()
        self.pacer = Pacer(self.timer)
        self._rng = rng or random.Random()

    async def send(self, lanes: Sequence[Lane], call: Callable[[], Awaitable[T]]) -> tuple[T, Delivered]:
        """``call()`` until it succeeds; its result and the attempts it took.

        Raises :class:`DeliveryFailed` when the policy is exhausted, the error is permanent or
        ambiguous, or the platform asks for a wait beyond ``max_wait_s``. Cancellation propagates.
        """
        policy = self.policy
        for attempt in range(1, policy.attempts + 1):
            await self.pacer.wait(lanes)
            try:
                result = await call()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                verdict = self.classify(exc)
                if verdict.kind == "ambiguous":  # it may be there already: never send it twice
                    raise DeliveryFailed(verdict.error, attempt, permanent=False, unknown=True) from exc
                if verdict.kind == "permanent":
                    raise DeliveryFailed(verdict.error, attempt, permanent=True) from exc
                if attempt == policy.attempts:
                    raise DeliveryFailed(verdict.error, attempt, permanent=False) from exc
                await self._pause(verdict, attempt, lanes, exc)
                continue
            return result, Delivered(attempt)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _pause(self, verdict: DeliveryVerdict, attempt: int, lanes: Sequence[Lane], exc: Exception) -> None:
        policy = self.policy
        if verdict.kind == "retry_after":
            if verdict.wait_s > policy.max_wait_s:
                raise DeliveryFailed(
                    f"{verdict.error} (asked to wait {verdict.wait_s:g} s)", attempt, permanent=False
                ) from exc
            # never sooner than told; a little later, at random, so retries do not stampede
            wait = verdict.wait_s + self._rng.uniform(0.0, policy.jitter * max(verdict.wait_s, 1.0))
            until = self.timer.now() + wait
            for lane in lanes[:1]:  # the chat itself; other lanes pace as usual
                self.pacer.hold(lane.key, until)
            return
        wait = policy.backoff_s * 2 ** (attempt - 1)
        wait *= 1.0 + self._rng.uniform(-policy.jitter, policy.jitter)
        await self.timer.sleep(min(wait, policy.max_wait_s))
