"""Time for the bot's durable state: one UTC text form, and a clock that tests can replace.

Everything that fires later (expiring exceptions, embargoes, held replies, the digest) reads
the time through an injected ``Clock`` so tests move time forward instead of sleeping, and
stores it with :func:`iso` so SQLite can compare times as plain strings.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def aware(moment: datetime) -> datetime:
    """Naive times are taken to be UTC (what the owner's ``until 2026-12-31`` means)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def iso(moment: datetime) -> str:
    """One fixed UTC text form, so SQLite can compare times as strings."""
    return aware(moment).astimezone(timezone.utc).isoformat(timespec="microseconds")
