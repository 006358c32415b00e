"""Abuse guards: a per-sender rate limit, and a watch on people fishing for secrets.

Both are sliding windows kept in memory, per platform identity. They protect the owner's
resources and attention, not the policy (the calculus already refuses what may not be said),
so losing them on a restart costs nothing worth persisting.

* Rate limit: more than ``max_messages`` in ``window`` seconds and the sender is not answered.
  Only the first refused message of a burst is reported (audited, and told to slow down in a
  direct chat); the rest are dropped quietly, so a flood cannot fill the audit log either.
* Deflection watch: someone who draws ``deflections`` deflections within ``deflection_window``
  seconds is probably probing; the owner gets one note per burst.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

Monotonic = Callable[[], float]


class Admission(Enum):
    OK = "ok"
    #: the first refused message of a burst: report it.
    LIMITED = "limited"
    #: later refused messages of the same burst: drop quietly.
    LIMITED_AGAIN = "limited_again"


@dataclass
class _Window:
    times: deque[float] = field(default_factory=deque)
    flagged_until: float = 0.0

    def push(self, now: float, window: float) -> int:
        self.times.append(now)
        while self.times and self.times[0] <= now - window:
            self.times.popleft()
        return len(self.times)


class AbuseGuard:
    """Sliding-window counters per sender; ``clock`` is injectable so tests need not sleep."""

    def __init__(
        self,
        max_messages: int = 20,
        window: float = 60.0,
        deflections: int = 5,
        deflection_window: float = 600.0,
        clock: Monotonic = time.monotonic,
        max_senders: int = 10_000,
    ) -> None:
        self.max_messages = max_messages
        self.window = window
        self.deflections = deflections
        self.deflection_window = deflection_window
        self.clock = clock
        self._max_senders = max_senders
        self._messages: dict[str, _Window] = {}
        self._deflected: dict[str, _Window] = {}

    def _get(self, table: dict[str, _Window], sender: str) -> _Window:
        win = table.get(sender)
        if win is None:
            if len(table) >= self._max_senders:  # bound memory under a flood of fresh identities
                table.pop(next(iter(table)))
            win = table[sender] = _Window()
        return win

    def admit(self, sender: str) -> Admission:
        """Count one message from ``sender``; may it be answered?"""
        if self.max_messages <= 0:
            return Admission.OK
        now = self.clock()
        win = self._get(self._messages, sender)
        # refused messages count too: hammering keeps the window full.
        if win.push(now, self.window) <= self.max_messages:
            return Admission.OK
        if win.flagged_until > now:
            return Admission.LIMITED_AGAIN
        win.flagged_until = now + self.window
        return Admission.LIMITED

    def deflected(self, sender: str) -> int | None:
        """Count one deflection; the count when it crosses the threshold (once per burst), else None."""
        if self.deflections <= 0:
            return None
        now = self.clock()
        win = self._get(self._deflected, sender)
        count = win.push(now, self.deflection_window)
        if count < self.deflections or win.flagged_until > now:
            return None
        win.flagged_until = now + self.deflection_window
        return count
