"""Answers a fake platform holds back: the call takes effect at once (a message is posted),
but its answer waits until the test releases it, so the client's timeout runs out first.

Tests prove "nothing was sent again" by events, not by waiting: the connector gives up (its
undelivered record, its note to the owner), the test releases the late answer, waits until
the fake has answered it (:meth:`LateAnswers.answered_late`), and only then counts the calls.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class LateAnswers:
    #: method -> calls still to hold back.
    pending: dict[str, int] = field(default_factory=dict)
    #: methods whose held answer has gone out, in order.
    answered: list[str] = field(default_factory=list)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def hold(self, method: str, times: int = 1) -> None:
        self.pending[method] = self.pending.get(method, 0) + times

    def release(self) -> None:
        """Let every held answer (and any later one) go out."""
        self.released.set()

    async def wait_to_answer(self, method: str) -> None:
        """The fake calls this once the call has taken effect, before it answers: a held answer
        waits for :meth:`release` and is then recorded in ``answered``."""
        if self.pending.get(method):
            self.pending[method] -= 1
            await self.released.wait()
            self.answered.append(method)

    async def answered_late(self, n: int = 1, timeout: float = 10.0) -> None:
        """Until ``n`` held answers have gone out (polled, with a deadline)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(self.answered) < n:
            if loop.time() > deadline:
                raise AssertionError(f"{len(self.answered)} late answers went out, not {n}")
            await asyncio.sleep(0.01)
