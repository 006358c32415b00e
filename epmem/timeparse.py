"""Explicit dates in a question ("on 3 June, 2023", "in July 2022") as a time window.

People ask their memory about a time as often as about a topic, and a chat session knows when
it happened. Only explicit calendar dates are read; relative ones ("last week") would need the
asker's clock and are left to the text match.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    )
}
_MON = "|".join(_MONTHS)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MON}),? (\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MON}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b({_MON}),? (\d{{4}})\b")
_YEAR = re.compile(r"\b(?:in|of|during) (\d{4})\b")


_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? ({_MON})\b")
_MONTH_DAY = re.compile(rf"\b({_MON}) (\d{{1,2}})(?:st|nd|rd|th)?\b")


def named_days(text: str) -> set[tuple[int, int]]:
    """The calendar days ``text`` names by day and month ("15 June", "June 15th", "the 3rd of
    May"), as (month, day); a year, if any, is not read: a chat says "on 15 June" of this year."""
    s = text.casefold()
    days = {(_MONTHS[m.group(2)], int(m.group(1))) for m in _DAY_MONTH.finditer(s)}
    days |= {(_MONTHS[m.group(1)], int(m.group(2))) for m in _MONTH_DAY.finditer(s)}
    return {(month, day) for month, day in days if 1 <= day <= 31}


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


# --------------------------------------------------------------------------- Chinese, relative

_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
    "十一": 11,
    "十二": 12,
    "日": 7,
    "天": 7,
}
_ZH_NUM = "十一|十二|[一二两三四五六七八九十]|1[0-2]|[1-9]"
_ZH_WEEK = re.compile(r"(?P<which>下下|下个?|这个?|本|上个?)(?:周|星期|礼拜)(?P<day>[一二三四五六日天1-7])")
_ZH_MONTH_PART = re.compile(
    rf"(?<![\d年])(?P<m>{_ZH_NUM})月(?P<part>底|末|初|中|中旬|上旬|下旬)?(?!\d|[一二三四五六七八九十]+[日号])"
)
_ZH_MONTH_DAY = re.compile(rf"(?<![\d年])(?P<m>{_ZH_NUM})月(?P<d>[0-3]?\d)[日号]")
_ZH_REL_DAY = {
    "今天": 0,
    "今日": 0,
    "明天": 1,
    "听日": 1,
    "聽日": 1,
    "后天": 2,
    "大后天": 3,
    "昨天": -1,
    "琴日": -1,
    "前天": -2,
}
_ZH_NEXT_MONTH = re.compile(r"下个?月(?P<part>底|末|初|中)?")


def _num(s: str) -> int:
    return int(s) if s.isdigit() else _ZH_DIGITS[s]


def _month_after(now: datetime, month: int) -> int:
    """The year of the next ``month`` on or after ``now``'s month (a chat speaks of what is ahead)."""
    return now.year if month >= now.month else now.year + 1


def resolve_dates_zh(text: str, now: datetime) -> str:
    """Chinese relative dates in a fact, resolved against the session's time and written after
    them in brackets: "下周三" -> "下周三(2026年3月11日)", "六月底" -> "六月底(2026年6月底)",
    "明天" -> "明天(2026年3月2日)". The words said stay (the canary, the tone); the date makes
    the fact mean the same thing when it is read months later."""

    def day(d: datetime) -> str:
        return f"{d.year}年{d.month}月{d.day}日"

    def week(m: re.Match[str]) -> str:
        which, target = m.group("which"), _num(m.group("day"))
        monday = now - timedelta(days=now.weekday())
        shift = {"下下": 2, "下": 1, "下个": 1, "上": -1, "上个": -1}.get(which, 0)
        return f"{m.group(0)}({day(monday + timedelta(weeks=shift, days=target - 1))})"

    def month_part(m: re.Match[str]) -> str:
        month = _num(m.group("m"))
        if not 1 <= month <= 12:
            return m.group(0)
        return f"{m.group(0)}({_month_after(now, month)}年{month}月{m.group('part') or ''})"

    def month_day(m: re.Match[str]) -> str:
        month, d = _num(m.group("m")), int(m.group("d"))
        if not 1 <= month <= 12 or not 1 <= d <= 31:
            return m.group(0)
        return f"{m.group(0)}({_month_after(now, month)}年{month}月{d}日)"

    def next_month(m: re.Match[str]) -> str:
        month = now.month % 12 + 1
        return f"{m.group(0)}({now.year + (now.month == 12)}年{month}月{m.group('part') or ''})"

    text = _ZH_WEEK.sub(week, text)
    text = _ZH_MONTH_DAY.sub(month_day, text)
    text = _ZH_MONTH_PART.sub(month_part, text)
    text = _ZH_NEXT_MONTH.sub(next_month, text)
    for word in sorted(_ZH_REL_DAY, key=len, reverse=True):
        if word in text and f"{word}(" not in text:
            text = re.sub(
                rf"(?<!大){word}(?!\()", f"{word}({day(now + timedelta(days=_ZH_REL_DAY[word]))})", text, count=1
            )
    return text
