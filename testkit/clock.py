"""A clock for the delivery path that tests move instead of sleeping.

:class:`FakeTimer` gives :class:`connectors.courier.Timer` a virtual monotonic time: ``sleep``
advances it at once (and yields to the loop), so a minute of pacing or a ``Retry-After`` runs
in microseconds while every wait is still recorded and checkable. ``now`` is also the audit
page's session clock (:class:`epmem.audit.web.PageConfig`): ``advance`` ends a session at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from connectors.courier import Timer


@dataclass
class FakeTimer:
    """Virtual seconds; ``sleeps`` lists every wait asked for, in order."""

    time: float = 1000.0
    sleeps: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += max(0.0, seconds)
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        """Time passes with nobody waiting (an audit page session running out)."""
        self.time += seconds

    @property
    def timer(self) -> Timer:
        return Timer(now=self.now, sleep=self.sleep)


@dataclass
class GatedTimer(FakeTimer):
    """Virtual time, except that a wait of exactly ``gated_s`` (the Slack delegate's chance for
    the owner to answer first) blocks until ``open()``; ``waiting`` counts the waits that came."""

    gated_s: float = 30.0
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: int = 0

    async def sleep(self, seconds: float) -> None:
        if seconds == self.gated_s:
            self.waiting += 1
            await self.gate.wait()
        await super().sleep(seconds)

    def open(self) -> None:
        self.gate.set()

    def shut(self) -> None:
        self.gate.clear()
