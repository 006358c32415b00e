"""Heads-up notes about strangers, batched: one note per window, never one per stranger.

Someone who keeps drawing deflections is probably fishing for secrets, and the owner gets a
note (bot/agent.py). A known contact is one person, one note per burst. A stranger is whoever
made an account a minute ago: ten fresh accounts would be ten notes, each quoting what they
wrote. So a stranger's heads-up joins a batch: the first in a quiet period is sent at once, with
everything the batch holds; the rest of the window (``EPMEM_HEADSUP_BATCH_MINUTES``) only add to
the batch, which goes out with the next stranger's heads-up after the window, or in the owner's
daily digest (:meth:`StrangerHeadsUp.take`), whichever comes first. A note quotes at most
:data:`EXCERPT` characters of one message per stranger, on one line.
"""

from __future__ import annotations

from bot.quoting import quote
import time
from collections.abc import Callable
from dataclasses import dataclass

#: how much of a stranger's latest question a note quotes.
EXCERPT = 60
#: how many strangers one note names (the rest are counted).
MAX_NAMED = 10


def excerpt(text: str, width: int = EXCERPT) -> str:
    """One quoted line (bot/quoting.py: line breaks shown, control characters named), at most
    about ``width`` characters."""
    return quote(text, width)


@dataclass(frozen=True, slots=True)
class Flagged:
    identity: str
    platform: str
    deflections: int
    latest: str


class StrangerHeadsUp:
    """The batch of strangers flagged since the last note; ``clock`` injectable (monotonic s)."""

    def __init__(self, window_s: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.clock = clock
        self._batch: dict[str, Flagged] = {}
        self._quiet_from: float | None = None

    def add(self, identity: str, platform: str, deflections: int, question: str) -> str | None:
        """A stranger was flagged: the note to send now (the whole batch), or None (batched)."""
        self._batch[identity] = Flagged(identity, platform, deflections, excerpt(question))
        now = self.clock()
        if self._quiet_from is not None and now < self._quiet_from:
            return None
        self._quiet_from = now + self.window_s
        return note(self.take())

    def take(self) -> list[Flagged]:
        """The batch not yet told to the owner, emptied (the digest lists it)."""
        out, self._batch = list(self._batch.values()), {}
        return out


def note(flagged: list[Flagged]) -> str:
    many = len(flagged) != 1
    head = (
        f"Heads-up: {len(flagged)} unknown account{'s' * many} kept drawing deflections "
        f"(one such note at a time; the rest come in the next one or your digest):"
    )
    return "\n".join([head, *lines_for(flagged)])


def lines_for(flagged: list[Flagged]) -> list[str]:
    out = [
        f"  {f.identity} ({f.platform}): {f.deflections}, latest \u201c{f.latest}\u201d" for f in flagged[:MAX_NAMED]
    ]
    if len(flagged) > MAX_NAMED:
        out.append(f"  ... and {len(flagged) - MAX_NAMED} more")
    return out
