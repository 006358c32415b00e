"""The words of owner commands that are not names: durations, dates and targets, read in one place.

``/allow f3 to ana for 7d``, ``/deny category:health to tom until 2026-12-31``,
``/level raj 2 from 2026-06-19``, ``/domain ana life in 2w``, ``/forget event:e12``: every
command reads these the same way, and a mistyped one gets the same message wherever it was
typed. (Dates inside a question, "what happened in July 2022", are a different matter: the
library reads those, in :mod:`epmem.timeparse`.)
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bot.clock import aware
from bot.commands.registry import CommandError

_DURATION = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
#: what a target may be prefixed with to say what it is (``event:e12``); unprefixed, the
#: command looks it up as each in turn.
TARGET_KINDS = ("fact", "event", "category")


def duration(word: str) -> timedelta:
    """``30m``, ``12h``, ``7d``, ``2w``."""
    m = _DURATION.match(word)
    if not m:
        raise CommandError(f"cannot read duration {word!r}: use e.g. 30m, 12h, 7d, 2w")
    return timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})


def moment(word: str, *, end_of_day: bool = False) -> datetime:
    """``2026-06-19`` (the start of that day, UTC, or its end with ``end_of_day``) or
    ``2026-06-19T09:00`` (UTC unless it says otherwise)."""
    try:
        when = aware(datetime.fromisoformat(word))
    except ValueError:
        raise CommandError(f"cannot read date {word!r}: use YYYY-MM-DD or YYYY-MM-DDTHH:MM") from None
    if end_of_day and len(word) == 10:
        when += timedelta(days=1)
    return when


def parse_expiry(words: list[str], now: datetime) -> datetime | None:
    """When an exception ends: ``for 7d`` / ``for 12h`` / ``until 2026-12-31`` (the end of that
    day, UTC); None (no words) for good."""
    if not words:
        return None
    if len(words) == 2 and words[0] == "for":
        return now + duration(words[1])
    if len(words) == 2 and words[0] == "until":
        return moment(words[1], end_of_day=True)
    raise CommandError(f"unexpected {' '.join(words)!r}: end with 'for 7d' or 'until 2026-12-31'")


def parse_when(words: list[str], now: datetime) -> datetime | None:
    """When a change should happen: ``from 2026-06-19`` (the start of that day, UTC),
    ``from 2026-06-19T09:00``, ``in 7d``; None (no words) for now."""
    if not words:
        return None
    if len(words) == 2 and words[0] == "in":
        return now + duration(words[1])
    if len(words) == 2 and words[0] == "from":
        when = moment(words[1])
        if when <= now:
            raise CommandError(f"{words[1]} has passed: leave out 'from' to change it now")
        return when
    raise CommandError(f"unexpected {' '.join(words)!r}: end with 'from 2026-06-19' or 'in 7d'")


def split_target(token: str) -> tuple[str, str]:
    """``event:e12`` -> ("event", "e12"); ``f3`` -> ("", "f3"): the kind it was prefixed with
    (one of :data:`TARGET_KINDS`), or "" for the command to find out."""
    kind, _, value = token.partition(":")
    if value and kind in TARGET_KINDS:
        return kind, value
    return "", token


__all__ = ["TARGET_KINDS", "duration", "moment", "parse_expiry", "parse_when", "split_target"]
