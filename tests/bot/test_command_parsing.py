"""Durations, dates and targets in owner commands: one reader (bot/commands/parsing.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.commands import CommandError
from bot.commands.parsing import duration, moment, parse_expiry, parse_when, split_target

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("word", "want"),
    [
        ("30m", timedelta(minutes=30)),
        ("12h", timedelta(hours=12)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
    ],
)
def test_durations(word: str, want: timedelta) -> None:
    assert duration(word) == want


@pytest.mark.parametrize("word", ["ever", "7", "d7", "7 d", "7y", "-1d"])
def test_a_duration_it_cannot_read_says_how_to_write_one(word: str) -> None:
    with pytest.raises(CommandError, match="cannot read duration .*30m, 12h, 7d, 2w"):
        duration(word)


def test_a_day_starts_or_ends_and_a_time_is_taken_as_utc() -> None:
    assert moment("2026-06-19") == datetime(2026, 6, 19, tzinfo=UTC)
    assert moment("2026-06-19", end_of_day=True) == datetime(2026, 6, 20, tzinfo=UTC)
    assert moment("2026-06-19T09:00", end_of_day=True) == datetime(2026, 6, 19, 9, tzinfo=UTC)
    with pytest.raises(CommandError, match="cannot read date '19/06/2026'"):
        moment("19/06/2026")


def test_expiry_and_when_read_the_same_durations_and_dates() -> None:
    assert parse_expiry([], NOW) is None and parse_when([], NOW) is None
    assert parse_expiry(["for", "7d"], NOW) == parse_when(["in", "7d"], NOW) == NOW + timedelta(days=7)
    assert parse_expiry(["until", "2026-12-31"], NOW) == datetime(2027, 1, 1, tzinfo=UTC)
    assert parse_when(["from", "2026-12-31"], NOW) == datetime(2026, 12, 31, tzinfo=UTC)
    with pytest.raises(CommandError, match="has passed"):
        parse_when(["from", "2026-01-01"], NOW)
    with pytest.raises(CommandError, match="end with 'for 7d'"):
        parse_expiry(["in", "7d"], NOW)
    with pytest.raises(CommandError, match="end with 'from 2026-06-19'"):
        parse_when(["for", "7d"], NOW)


@pytest.mark.parametrize(
    ("token", "want"),
    [
        ("event:e12", ("event", "e12")),
        ("fact:f3", ("fact", "f3")),
        ("category:health", ("category", "health")),
        ("f3", ("", "f3")),
        ("slack:U1", ("", "slack:U1")),
        ("event:", ("", "event:")),
    ],
)
def test_targets(token: str, want: tuple[str, str]) -> None:
    assert split_target(token) == want
