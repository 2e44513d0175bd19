"""Dates a request names ("on 7 July, 2023", "in October 2023", "in June", "2026-02-03"),
as windows that pick out the sessions held then."""

from __future__ import annotations

import contextlib
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
# A day without its year ("21 April", "April 21").
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_M}(?![\w,]*\s+\d{{4}})")
_MONTH_DAY = re.compile(rf"\b{_M}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!,?\s+\d{{4}})(?!:)")
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

    def meets(self, first: date, last: date) -> bool:
        """Whether the stretch from ``first`` to ``last`` has a day in this window."""
        if self.month is not None:
            months = (last.year - first.year) * 12 + last.month - first.month
            return any((first.month - 1 + k) % 12 + 1 == self.month for k in range(months + 1))
        assert self.start is not None and self.end is not None
        return first <= self.end and self.start <= last


_BETWEEN = re.compile(r"\bbetween\b.+\band\b")
_STRETCH_BEFORE = re.compile(r"\b(week|weekend|month)\s+before\b")


def _first_day(lower: str) -> str:
    """The first date written in ``lower`` with its day, as written ("" when none)."""
    found = [
        p.search(lower) for p in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR, _ISO, _DAY_MONTH, _MONTH_DAY)
    ]
    hits = [m for m in found if m]
    return min(hits, key=lambda m: m.start()).group(0) if hits else ""


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
    if len(days) == 1 and days[0] and _BETWEEN.search(lower):
        # "between August 11 and August 15 2023": a day without its year is in the year
        # of the other.
        year = days[0].year
        days += [
            _safe_date(year, _month(m.group(2)), int(m.group(1)))
            for m in _DAY_MONTH.finditer(lower)
        ]
        days += [
            _safe_date(year, _month(m.group(1)), int(m.group(2)))
            for m in _MONTH_DAY.finditer(lower)
        ]
        windows = [DateWindow(d - slack, d + slack) for d in days if d is not None]
    if len(windows) == 2 and _BETWEEN.search(lower):
        # "between 11 August and 15 August 2023": the days from one to the other.
        lo, hi = sorted((windows[0], windows[1]), key=lambda w: w.start or date.min)
        return [DateWindow(lo.start, hi.end)]
    before = _STRETCH_BEFORE.search(lower)
    if len(windows) == 1 and before and before.end() <= lower.find(_first_day(lower)):
        # "the week before 16 November 2023": the stretch up to that day.
        start, end = windows[0].start, windows[0].end
        assert start is not None and end is not None
        span = {"week": 7, "weekend": 7, "month": 31}[before.group(1)]
        return [DateWindow(start - timedelta(days=span), end)]
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


# "in 2023", "during the summer of 2021", "in summer 2021": a year, or a season in it.
_IN_YEAR = re.compile(
    r"\b(?:in|during|throughout)\s+(?:the\s+)?(?:(spring|summer|fall|autumn|winter)\s+(?:of\s+)?)?"
    r"(\d{4})\b"
)
_SEASON_MONTHS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11)}


def year_windows(text: str) -> list[DateWindow]:
    """The years (or seasons of a year) ``text`` names with "in"/"during": a wider time than
    date_windows reads, for ranking what was said in it, not for picking sessions."""
    out = []
    for m in _IN_YEAR.finditer(text.lower()):
        year = int(m.group(2))
        season = m.group(1)
        if season == "winter":
            # The winter months of that year, at either end of it (which winter is meant
            # is not said).
            out.append(DateWindow(date(year, 1, 1), date(year, 3, 1) - timedelta(days=1)))
            out.append(DateWindow(date(year, 12, 1), date(year, 12, 31)))
        elif season:
            first, last = _SEASON_MONTHS[season]
            out.append(
                DateWindow(date(year, first, 1), date(year, last + 1, 1) - timedelta(days=1))
            )
        else:
            out.append(DateWindow(date(year, 1, 1), date(year, 12, 31)))
    return out


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


# -- dates as said: relative expressions resolved against the day the words were said ------

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_COUNT_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
    "a few": 3,
}
_COUNT = (
    r"(\d{1,2}|a few|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
)
# A weekday as people write it, in full or cut short ("last Fri", "next Tues").
_WD = "(" + "|".join(WEEKDAYS) + "|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)"
_RELATIVE = re.compile(
    r"\b(?:(yesterday|today|tonight|tomorrow|last night|this morning|this afternoon"
    r"|this evening|the other day|recently|lately)"
    rf"|(last|this past|past|next|this|on)\s+{_WD}"
    r"|(last|next|this|past)\s+(week|weekend|month|year|summer|winter|spring|fall|autumn)"
    rf"|{_COUNT}\s+(days?|weeks?|weekends?|months?|years?)\s+ago)\b",
    re.I,
)
_YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
# A month named against the day said ("last August", "next March"): its name written
# capitalised, as a month is ("this may be" is no month).
_MONTH_NAMES = "|".join(m.capitalize() for m in MONTHS)
_MONTH_RELATIVE = re.compile(rf"\b((?i:last|next|this|past))\s+({_MONTH_NAMES})\b")


@dataclass(frozen=True)
class SaidDate:
    """A time a sentence speaks of: the words it uses (``phrase``), as a reader would write
    the time they mean (``written``), whether that is one day (``exact``), and the days it
    spans on the calendar (``first`` to ``last``; None when the words are too vague to
    place, "recently", "last summer")."""

    phrase: str
    written: str
    exact: bool
    first: date | None = None
    last: date | None = None

    @property
    def calendar(self) -> str:
        """The time as a day on the calendar when it is one ("Friday 14 July 2023"), else as
        written ("the week before 15 July 2023")."""
        return written_date(self.first) if self.exact and self.first else self.written


def written_date(day: date) -> str:
    """A day as people write it: "Saturday 14 March 2026"."""
    return f"{WEEKDAYS[day.weekday()].capitalize()} {day.day} {day:%B} {day.year}"


def anchor_date(day: date) -> str:
    """A day a time is told relative to ("the week before 14 March 2026"): without its
    weekday, which names the day meant when the answer is that day, not when it is a
    reference point for a stretch around it."""
    return f"{day.day} {day:%B} {day.year}"


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _COUNT_WORDS.get(word.removeprefix("a "), 1)


Placed = tuple[str, bool, date | None, date | None]
# The months of the seasons that lie within one calendar year (as in the northern
# hemisphere, where the calendar's month names were given their seasons).
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11)}


def _month_span(month_index: int) -> tuple[date, date]:
    """The first and last day of the month ``month_index`` (year * 12 + month - 1)."""
    first = date(month_index // 12, month_index % 12 + 1, 1)
    nxt = month_index + 1
    return first, date(nxt // 12, nxt % 12 + 1, 1) - timedelta(days=1)


def _one_day(day: date) -> Placed:
    return written_date(day), True, day, day


def _relative(found: re.Match[str], said_on: date) -> Placed:
    """What one relative expression means, said on ``said_on``: the written time, whether
    it is one day, and the days it spans (None when too vague to place)."""
    word, wd_lead, wd, lead, unit, count, units = found.groups()
    anchor = anchor_date(said_on)
    if word:
        word = word.lower()
        shift = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(word)
        if shift is not None:
            return _one_day(said_on + timedelta(days=shift))
        if word in ("the other day", "recently", "lately"):
            return f"shortly before {anchor}", False, None, None
        return _one_day(said_on)  # today, tonight, this morning …
    if wd:
        target = next(n for n, name in enumerate(WEEKDAYS) if name.startswith(wd.lower()[:3]))
        if wd_lead.lower() == "next":
            return _one_day(said_on + timedelta(days=(target - said_on.weekday()) % 7 or 7))
        # Said of a weekday without "next", people mean the last one gone by.
        return _one_day(said_on - timedelta(days=(said_on.weekday() - target) % 7 or 7))
    if unit:
        unit, lead = unit.lower(), lead.lower()
        step = {"next": 1, "this": 0}.get(lead, -1)
        if unit == "year":
            year = said_on.year + step
            return str(year), False, date(year, 1, 1), date(year, 12, 31)
        if unit == "month":
            month_index = said_on.year * 12 + said_on.month - 1 + step
            first, last = _month_span(month_index)
            return f"{first:%B} {first.year}", False, first, last
        where = {"next": "after", "this": "of"}.get(lead, "before")
        if unit in ("week", "weekend"):
            # The seven days before (or after) the day said; this week: the days around it.
            first = said_on + timedelta(days={1: 1, 0: -3}.get(step, -7))
            return f"the {unit} {where} {anchor}", False, first, first + timedelta(days=6)
        months = _SEASONS.get(unit)
        if months:
            # A season within one calendar year is named by its year: the last one ended
            # before the day said, this one the one of its year, the next one after it.
            year = said_on.year
            if step < 0:
                year -= said_on.month <= months[1]
            elif step > 0:
                year += said_on.month >= months[0]
            first, last = date(year, months[0], 1), _month_span(year * 12 + months[1] - 1)[1]
            return f"the {unit} of {year}", False, first, last
        return f"the {unit} {where} {anchor}", False, None, None  # winter spans two years
    n, units = _count(count), units.lower().rstrip("s")
    if "few" in count.lower() or "couple" in count.lower():
        return f"a few {units}s before {anchor}", False, None, None
    if units == "day":
        return _one_day(said_on - timedelta(days=n))
    if units == "year":
        year = said_on.year - n
        return str(year), False, date(year, 1, 1), date(year, 12, 31)
    if units == "month":
        first, last = _month_span(said_on.year * 12 + said_on.month - 1 - n)
        return f"{first:%B} {first.year}", False, first, last
    # The count as said ("two weeks before", "3 days before").
    back = said_on - timedelta(days=7 * n if units.startswith("week") else n)
    return (
        f"{count.lower()} {units}{'s' if n > 1 else ''} before {anchor}",
        False,
        back,
        back,
    )


def _relative_month(lead: str, month: int, said_on: date) -> Placed:
    """The month ``month`` said with ``lead`` on ``said_on``: "last August" is the last one
    gone by before the month it was said in, "next August" the first one after it, "this
    August" the one of its year."""
    year = said_on.year
    if lead.lower() in ("last", "past"):
        year -= month >= said_on.month
    elif lead.lower() == "next":
        year += month <= said_on.month
    first, last = _month_span(year * 12 + month - 1)
    return f"{first:%B} {first.year}", False, first, last


def _nearest_year(said_on: date, month: int, day: int) -> date | None:
    options = [_safe_date(said_on.year + k, month, day) for k in (-1, 0, 1)]
    found = [d for d in options if d is not None]
    return min(found, key=lambda d: abs((d - said_on).days)) if found else None


# A day of the month said alone ("the 14th is the opening day", "on the 3rd."): a numeral
# ordinal after "the" that no noun follows ("the 14th century", "the 3rd floor" count things,
# not days): the sentence ends, or a verb, a preposition, a conjunction or a pronoun comes next.
_DAY_ALONE = re.compile(
    r"\bthe\s+([1-9]|[12]\d|3[01])(?:st|nd|rd|th)\b(?!-)"
    r"(?=\s*(?:$|[.,;:!?)\u2013\u2014-]|(?:is|was|will|would|'s|are|were|and|or|to|through"
    r"|thru|till|until|at|for|when|so|but|because|if|then|as|which|we|i|you|he|she|they"
    # a preposition that relates the day to an event ("on the 15th after my trip")
    r"|after|before|with|from"
    r"|it|there)\b))",
    re.I,
)


# Told as gone by: a past form of "be", "do", "go", "come" or "have", or a verb in -ed
# straight after its subject ("we sailed on the 3rd").
_PAST = re.compile(
    r"\b(?:was|were|did|went|came|had|(?:i|we|he|she|they|you)\s+[a-z]{2,}ed)\b", re.I
)


def _day_alone(day: int, context: list[SaidDate], said_on: date | None, past: bool) -> date | None:
    """The day a day of the month said alone ("the 14th") means. English takes its month
    from the date said just before that names a month ("Tuesday 21 April … The 14th is the
    opening day": 14 April); without one, from the month it was said in, or the next month
    when that day of this one has passed ("on the 3rd", said on 20 May: 3 June). Told as
    gone by (``past``), it is the last such day up to the day it was said ("we sailed on
    the 25th", said on 20 May: 25 April)."""
    for d in reversed(context):
        if d.first and d.last and (d.last - d.first).days <= 31 and d.first.month == d.last.month:
            return _safe_date(d.first.year, d.first.month, day)
    if said_on is None:
        return None
    month_index = said_on.year * 12 + said_on.month - 1
    if past and day > said_on.day:
        month_index -= 1
    elif not past and day < said_on.day:
        month_index += 1
    return _safe_date(month_index // 12, month_index % 12 + 1, day)


def said_dates(text: str, said_on: date | None, before: str = "") -> list[SaidDate]:
    """The times ``text`` speaks of, in the order it says them, each written as a reader
    would write it: a named day as "Sunday 7 May 2023", a month as "May 2023", a year;
    relative expressions ("last Friday", "yesterday", "two weeks ago") resolved against
    ``said_on``, the day the words were said (left out when that is unknown); a day of the
    month said alone ("the 14th") in the month of the date said before it, in ``text`` or in
    ``before`` (what was said before it in its turn), else of the day it was said."""
    lower = text.lower()
    found: list[tuple[int, int, SaidDate]] = []

    def add(m: re.Match[str], placed: Placed) -> None:
        if not any(a <= m.start() < b or m.start() <= a < m.end() for a, b, _ in found):
            found.append((m.start(), m.end(), SaidDate(text[m.start() : m.end()], *placed)))

    days = [
        (m, _safe_date(int(m.group(3)), _month(m.group(2)), int(m.group(1))))
        for m in _DAY_MONTH_YEAR.finditer(lower)
    ]
    days += [
        (m, _safe_date(int(m.group(3)), _month(m.group(1)), int(m.group(2))))
        for m in _MONTH_DAY_YEAR.finditer(lower)
    ]
    days += [
        (m, _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        for m in _ISO.finditer(lower)
    ]
    if said_on is not None:
        # "on 21 April", "Tuesday 21 April": the year is the one that puts the day nearest
        # the day it was said.
        days += [
            (m, _nearest_year(said_on, _month(m.group(2)), int(m.group(1))))
            for m in _DAY_MONTH.finditer(lower)
        ]
        days += [
            (m, _nearest_year(said_on, _month(m.group(1)), int(m.group(2))))
            for m in _MONTH_DAY.finditer(lower)
        ]
    for m, d in days:
        if d:
            add(m, _one_day(d))
    for m in _MONTH_YEAR.finditer(lower):
        first, last = _month_span(int(m.group(2)) * 12 + _month(m.group(1)) - 1)
        add(m, (f"{first:%B} {first.year}", False, first, last))
    if said_on is not None:
        # A time told relative to a day at the calendar's edge (a stamp of year 1 or 9999)
        # may fall off the calendar: it names no day that can be written, so it is left out.
        for m in _RELATIVE.finditer(text):
            with contextlib.suppress(OverflowError, ValueError):
                add(m, _relative(m, said_on))
        for m in _MONTH_RELATIVE.finditer(text):
            with contextlib.suppress(OverflowError, ValueError):
                add(m, _relative_month(m.group(1), MONTHS[m.group(2).lower()], said_on))
    for m in _YEAR.finditer(lower):
        year = int(m.group(1))
        add(m, (m.group(1), False, date(year, 1, 1), date(year, 12, 31)))
    # Only a time said with its numbers ("21 April", "May 2023") names the month meant.
    named = [(a, d) for a, _b, d in found if re.search(r"\d", d.phrase)]
    alone = list(_DAY_ALONE.finditer(text))
    earlier = said_dates(before, said_on) if alone and before else []
    earlier = [d for d in earlier if re.search(r"\d", d.phrase)]
    for m in alone:
        context = earlier + [d for a, d in sorted(named, key=lambda f: f[0]) if a < m.start()]
        day = _day_alone(int(m.group(1)), context, said_on, bool(_PAST.search(text)))
        if day:
            add(m, _one_day(day))
    return [s for _a, _b, s in sorted(found, key=lambda f: f[0])]


def date_words(text: str) -> set[str]:
    """The words of ``text`` that only name a time (month names, years, weekdays): a question
    that names "February 2023" asks about that time, it does not ask memory for the word."""
    words = {w.lower() for w in re.findall(r"[\w]+", text)}
    names = set(MONTHS) | {m[:3] for m in MONTHS} | set(WEEKDAYS)
    return {w for w in words if w in names or _YEAR.fullmatch(w)}


# A stretch told against a date the question names, written before it: "the week before",
# "two weeks before", "last weekend before", "the evening of", "the beginning of".
_STRETCH_LEAD = re.compile(
    r"(?:\b(?:the|last|this|next|a|an|one|two|three|four|five|six|few|couple|of|\d{1,2}"
    r"|first|second|third|fourth|early|late|mid)\s+)*"
    r"\b(?:days?|nights?|weeks?|weekends?|months?|morning|afternoon|evening|night"
    r"|beginning|start|end|middle|half)\s+(?:before|after|of)\s+(?:the\s+)?$"
)
_DATE_PHRASES = (
    _DAY_MONTH_YEAR,
    _MONTH_DAY_YEAR,
    _ISO,
    _DAY_MONTH,
    _MONTH_DAY,
    _MONTH_YEAR,
    _MONTH_ONLY,
    _BETWEEN,
)


def time_words(text: str) -> set[str]:
    """The words of ``text`` that only say which time it speaks of: date_words, and the
    rest of each phrase that names a date ("on May 3, 2023": the day's number; "the week
    before 16 November": the stretch told against it). Asked "Who did X have dinner with on
    May 3?", memory is asked for the time, not for the words "3" or "week"."""
    lower = text.lower()
    words = date_words(text)
    for pattern in _DATE_PHRASES:
        for m in pattern.finditer(lower):
            if pattern is _BETWEEN and not date_words(m.group(0)):
                continue  # "between the two of them" names no time
            lead = _STRETCH_LEAD.search(lower[: m.start()])
            start = lead.start() if lead else m.start()
            words |= set(re.findall(r"\w+", lower[start : m.end()]))
    return words


def named_years(text: str) -> set[int]:
    """The years ``text`` names ("in 2023")."""
    return {int(y) for y in _YEAR.findall(text)}


def stamp_day(stamp: str) -> date | None:
    """The day of an ISO 8601 stamp ("2023-05-08T13:56:00"), None when it is not one."""
    try:
        return date.fromisoformat(stamp[:10])
    except ValueError:
        return None
