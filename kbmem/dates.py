"""Dates a request names ("on 7 July, 2023", "in October 2023", "in June", "2026-02-03"),
as windows that pick out the sessions held then."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

MONTHS = {
    m: n
    for n, m in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
_M = "(" + "|".join(MONTHS) + r"|" + "|".join(m[:3] for m in MONTHS) + r")\.?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_M},?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_M}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b{_M},?\s+(\d{{4}})\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_ONLY = re.compile(rf"\b(?:in|during|since|early|late|mid|of|last)\s+{_M}\b")


@dataclass(frozen=True)
class DateWindow:
    start: date | None
    end: date | None
    month: int | None = None  # a month of any year ("in June")

    def contains(self, day: date) -> bool:
        if self.month is not None:
            return day.month == self.month
        assert self.start is not None and self.end is not None
        return self.start <= day <= self.end


def _month(name: str) -> int:
    name = name.lower().rstrip(".")
    return MONTHS.get(name) or next(n for m, n in MONTHS.items() if m.startswith(name))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def date_windows(text: str, slack_days: int = 1) -> list[DateWindow]:
    """The dates ``text`` names, most specific first; a named day gets ``slack_days`` on
    either side (a session's date and the day it is said to be about may differ by one)."""
    lower = text.lower()
    slack = timedelta(days=slack_days)
    days: list[date | None] = []  # None: a day that does not exist (31 February)
    for m in _DAY_MONTH_YEAR.finditer(lower):
        days.append(_safe_date(int(m.group(3)), _month(m.group(2)), int(m.group(1))))
    for m in _MONTH_DAY_YEAR.finditer(lower):
        days.append(_safe_date(int(m.group(3)), _month(m.group(1)), int(m.group(2))))
    for m in _ISO.finditer(lower):
        days.append(_safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    windows = [DateWindow(d - slack, d + slack) for d in days if d is not None]
    if windows:
        return windows
    for m in _MONTH_YEAR.finditer(lower):
        year, month = int(m.group(2)), _month(m.group(1))
        first = date(year, month, 1)
        last = date(year + (month == 12), month % 12 + 1, 1) - timedelta(days=1)
        windows.append(DateWindow(first, last))
    if windows:
        return windows
    return [DateWindow(None, None, _month(m.group(1))) for m in _MONTH_ONLY.finditer(lower)]


def sessions_in(windows: list[DateWindow], memory: list[tuple[str, str, str]]) -> list[str]:
    """Session ids (from the memory's ``(date, session id, memo)`` lines) held in a window."""
    out = []
    for day_text, session_id, _memo in memory:
        try:
            day = date.fromisoformat(day_text[:10])
        except ValueError:
            continue
        if any(w.contains(day) for w in windows):
            out.append(session_id)
    return out
