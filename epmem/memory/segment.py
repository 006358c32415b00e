"""Where a long conversation changes topic: the cut points that keep sessions small.

A chat is first cut at long silences (epmem.memory.sessions.SESSION_GAP). A chat that never
falls silent for that long (a busy family group, a partner's chat over months) would still be
one enormous session: too long to recall well, to distil in one model call, or to hold in
memory. So a chunk that grows past ``Segmenting.max_turns`` is cut at its most likely topic
boundary: where the pause is longest and the words before and after have least in common
(TextTiling's lexical-cohesion idea, with the pause as a second signal), never between a
message and a reply to it if another boundary will do. The cut depends only on the messages,
so importing the same export again cuts it the same way (stable session ids).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

_WORD = re.compile(r"[^\W\d_]{4,}")


class Timed(Protocol):
    @property
    def time(self) -> object: ...

    @property
    def text(self) -> str: ...

    @property
    def msg_id(self) -> str: ...

    @property
    def reply_to(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Segmenting:
    #: a silence longer than this always starts a new session.
    gap: timedelta = timedelta(hours=6)
    #: a chunk this long is cut at its best topic boundary (bounds a session's size).
    max_turns: int = 120
    #: no piece shorter than this comes out of a topic cut.
    min_turns: int = 20
    #: messages on each side compared for the change of words.
    window: int = 8
    #: weight of the change of words against the (log-minutes) pause.
    lexical_weight: float = 2.0
    #: a cut between a message and its reply costs this much.
    reply_penalty: float = 2.0

    def __post_init__(self) -> None:
        if not 1 <= self.min_turns <= self.max_turns // 2:
            raise ValueError("Segmenting: need 1 <= min_turns <= max_turns / 2")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def best_cut(messages: Sequence[Timed], config: Segmenting) -> int:
    """The index where the second piece starts: in [min_turns, len - min_turns]."""
    n = len(messages)
    lo, hi = config.min_turns, n - config.min_turns
    if hi < lo:
        return n // 2
    bags = [_words(m.text) for m in messages]
    ids_before: set[str] = set()
    best, best_score = lo, -math.inf
    for m in messages[:lo]:
        ids_before.add(m.msg_id)
    for i in range(lo, hi + 1):
        before = set().union(*bags[max(0, i - config.window) : i])
        after = set().union(*bags[i : i + config.window])
        union = before | after
        shift = 1.0 - (len(before & after) / len(union)) if union else 0.0
        score = config.lexical_weight * shift + _pause(messages[i - 1].time, messages[i].time)
        replies_across = any(m.reply_to in ids_before for m in messages[i : i + config.window] if m.reply_to)
        if replies_across:
            score -= config.reply_penalty
        if score > best_score:
            best, best_score = i, score
        ids_before.add(messages[i].msg_id)
    return best


def _pause(a: object, b: object) -> float:
    try:
        seconds = (b - a).total_seconds()  # type: ignore[operator]
    except TypeError:
        return 0.0
    return math.log1p(max(0.0, seconds) / 60.0)
