"""Explicit dates in a question ("on 3 June, 2023", "in July 2022") as a time window.

People ask their memory about a time as often as about a topic, and a chat session knows when
it happened. Only explicit calendar dates are read; relative ones ("last week") would need the
asker's clock and are left to the text match.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_MONTHS = {m: i + 1 for i, m in enumerate((
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december"))}
_MON = "|".join(_MONTHS)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MON}),? (\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MON}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b({_MON}),? (\d{{4}})\b")
_YEAR = re.compile(r"\b(?:in|of|during) (\d{4})\b")


def _day(year: int, month: int, day: int) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def question_window(text: str) -> tuple[datetime, datetime] | None:
    """[start, end) of the first explicit date in ``text``, or None."""
    s = text.casefold()
    if m := _DAY_MONTH_YEAR.search(s):
        return _day(int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))
    if m := _MONTH_DAY_YEAR.search(s):
        return _day(int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)))
    if m := _MONTH_YEAR.search(s):
        year, month = int(m.group(2)), _MONTHS[m.group(1)]
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
        return start, end
    if m := _YEAR.search(s):
        year = int(m.group(1))
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    return None
