"""The answer to "when" and "how long" (kbmem.research.extract): ``date``, the date the best
dated sentence gives resolved against the day it was said (kbmem.dates.said_dates), the
time its turn tells, or the day it was told; the event a "when did X …?" question asks
about (``asked_event``), whether it asks when something was said (``asks_saying``) or of
a plan (``asks_ahead``); and ``duration``, the stretch of time said."""

from __future__ import annotations

import datetime
import re

from kbmem.dates import SaidDate, anchor_date, date_words, written_date
from kbmem.index.late import FUNCTION_WORDS
from kbmem.index.tenant import analyze
from kbmem.research.counts import number_value
from kbmem.research.extract import FIRM_SHARE, Extracted
from kbmem.research.grammar import PHRASE_EDGE
from kbmem.research.ranking import Ranking
from kbmem.research.said import STOP
from kbmem.research.spans import CLOCK, DURATION, PREPOSITIONS, RECURRING, SINCE, stem_set
from kbmem.research.types import Said

TOLD_TIE = 0.95  # of the best, for an earlier telling of the same event to answer "when"
DATED_SHARE = 0.6  # of the best share, for a dated sentence to answer "when" over it


def date(r: Ranking) -> Extracted:
    """The date the best dated sentence gives, resolved against the day it was said (a day
    named on the calendar over one said relative to today); else the day the best sentence
    was said, as "around" it. Asked which month or year, that month or year."""
    asked_unit = _ASKS_UNIT.search(r.question)
    unit = asked_unit.group(1) if asked_unit else ""

    yearly = bool(_ASKS_YEARLY.search(r.question))

    def in_unit(when: SaidDate) -> str:
        """``when`` written in the unit asked, else as said."""
        if unit and when.first:
            return _in_unit(unit, when.first)
        if yearly and when.exact and when.first:
            return f"{when.first.day} {when.first:%B}"
        return when.written

    def around(s: Said) -> str:
        """When ``s`` tells of the event: a time its turn says, or the turn it answers a
        question about, else the day it was told."""
        in_turn = _turn_time(r, s, asked_words) or _asked_about_time(r, s, asked_words)
        if in_turn:
            return in_unit(in_turn)
        if not s.day:
            return ""
        if unit:
            return _in_unit(unit, s.day)
        return f"around {anchor_date(s.day)}"

    asked_words = date_words(r.question)
    habit = recurring(r)
    if habit:
        return habit
    begun = _begun_by_stretch(r)
    if begun:
        return begun
    if asks_saying(r.question):
        said = _first_told(r.ranked, 1)[2]
        if said.day:
            return (_in_unit(unit, said.day) if unit else written_date(said.day)), [said]
    # The sentence that says most of the question; a dated one that says much less of it
    # speaks of another event, and the day this one was said is the better answer.
    told = _first_told(r.ranked, 1)
    dated = r.top("date")[:3]
    if asks_ahead(r.question):
        # Asked of a plan, a sentence that speaks of a time ahead of its day answers first.
        dated.sort(key=lambda s: not _speaks_ahead(s))
    event = asked_event(r.question)
    told_event = bool(event & stem_set(told[2].claim))
    other_event = False
    for s in dated:
        if r.weigher.share(s) < DATED_SHARE * told[1]:
            return around(told[2]), [told[2]]
        if told_event and not event & stem_set(s.claim):
            # The sentence saying most of the question says the event asked ("When did X
            # apply …?" — "I applied …"); a dated one that does not tells of another.
            other_event = True
            continue
        found = [d for d in s.dates() if not _restates(d, asked_words)]
        if found:
            named = [d for d in found if d.exact and re.search(r"\d", d.phrase)]
            exact = named or [d for d in found if d.exact] or found
            near = r.nearest(s.claim, [d.phrase for d in exact])
            when = next(d for d in exact if d.phrase == near)
            if _HOW_LONG_AGO.search(r.question) and when.phrase.lower().endswith("ago"):
                # Asked how long ago, the answer is the stretch as said, then when that was.
                return f"{when.phrase} ({when.written})", [s]
            offset = _told_by_offset(s.claim, when, r.weigher.terms)
            if offset:
                return in_unit(offset), [s]
            if not unit and not yearly:
                stretch = _stretch_to(s.claim, when)
                if stretch:
                    return stretch, [s]
            return in_unit(when), [s]
    if other_event and (told[2].day or _turn_time(r, told[2], asked_words)):
        return around(told[2]), [told[2]]
    # Nothing dated answers: a time the best sentence's turn says, else the day it was
    # told (what memory knows).
    best = _first_told(r.ranked, 0)[2]
    return around(best), [best]


# "When did X mention / say / bring up / talk about …?": asked when something was said.
_ASKS_SAYING = re.compile(
    r"^\s*[Ww]hen\s+(?:did|has|had)\s+[A-Z][\w'’-]*(?:\s+(?:and|&)\s+[A-Z][\w'’-]*)?\s+"
    r"(?:first\s+)?(?:mention|say|tell|bring\s+up|talk\s+about|speak\s+(?:of|about))\b"
)


def asks_saying(question: str) -> bool:
    """Whether ``question`` asks when something was said: the sentence saying it is the
    event, and the day it was said its time, exactly (the words it says may tell of another
    time, which is not the one asked)."""
    return bool(_ASKS_SAYING.match(question))


def _turn_time(r: Ranking, s: Said, asked_words: set[str]) -> SaidDate | None:
    """The one time the other sentences of ``s``'s turn place on the calendar (None when
    they say none or several; "recently" places nothing): a turn tells of one event
    ("Here's a pic from last Friday …; we had a great time throwing a party"), so its time
    is that event's. Unless a plan is asked, a time ahead of the day it was said ("a
    competition next month") dates another event: what is told done or under way has
    happened by then."""
    ahead = asks_ahead(r.question)
    times = {
        d.written: d
        for o in r.all
        if o is not s and o.item is s.item and (o.start, o.end) == (s.start, s.end)
        for d in o.dates()
        if d.first and not _restates(d, asked_words) and (ahead or not _ahead_of(d, o.day))
    }
    return next(iter(times.values())) if len(times) == 1 else None


def _ahead_of(when: SaidDate, day: datetime.date | None) -> bool:
    """Whether ``when`` begins after ``day``, the day it was said."""
    return bool(day and when.first and when.first > day)


def _asked_about_time(r: Ranking, s: Said, asked_words: set[str]) -> SaidDate | None:
    """The one time of what ``s`` replies about: a reply answers the question before it,
    and a question that names no time ("What did you do to make them so happy?") asks
    about what its speaker was just told, so the time the replying speaker's turn before
    it says ("Here's a pic from last Friday …") is the reply's. None when ``s`` replies to
    nothing, the question says a time of its own, or that turn says none or several."""
    if not s.replies:
        return None
    turn = [o for o in r.all if o.item is s.item and o.end == s.start - 1]
    if not turn or _turn_times(r, turn, asked_words):
        return None
    told = [
        o
        for o in r.all
        if o.item is s.item and o.end == turn[0].start - 1 and o.speaker == s.speaker
    ]
    times = _turn_times(r, told, asked_words)
    return next(iter(times.values())) if len(times) == 1 else None


def _turn_times(r: Ranking, turn: list[Said], asked_words: set[str]) -> dict[str, SaidDate]:
    """The times ``turn`` places on the calendar, as _turn_time reads them."""
    ahead = asks_ahead(r.question)
    return {
        d.written: d
        for o in turn
        for d in o.dates()
        if d.first and not _restates(d, asked_words) and (ahead or not _ahead_of(d, o.day))
    }


# "When is X's birthday?": a day that comes back every year is asked by its day and month;
# the weekday and year are those of one celebration of it.
_ASKS_YEARLY = re.compile(r"^\s*when\s+is\b.*\b(?:birthday|anniversary|name\s*day)\b", re.I)


# "In which month …?", "What year …?": the answer is that month or year, not a day in it.
_ASKS_UNIT = re.compile(r"\b(?:which|what)\s+(month|year)\b", re.I)


def _in_unit(unit: str, day: datetime.date) -> str:
    return f"{day:%B} {day.year}" if unit.lower() == "month" else str(day.year)


# "When did X <verb> …?": the verb that names the event asked; when it only carries the
# event ("get accepted", "go camping", "have a party"), the first word after it that is not
# a grammar word.
# The auxiliary may follow the subject as people type it ("When Jon is planning to …?").
_AUX = r"(?:did|does|do|has|have|had|will|would|was|is|are)"
_WHEN_VERB = re.compile(
    rf"^\s*[Ww]hen\s+(?:{_AUX}\s+)?"
    r"[A-Z][\w-]*(?:['’]s\s+[a-z][\w-]*)?(?:\s+(?:and|&)\s+[A-Z][\w-]*)?"
    rf"(?:\s+{_AUX}\b)?((?:\s+[a-z][\w'’-]*){{1,5}})"
)
# A verb that only carries the one after it ("planning to open", "going to move"): the
# event asked is the second.
_CARRIES = re.compile(r"^(?:plan(?:s|ning|ned)?|going|about|hoping|trying)$", re.I)

# A verb of beginning, whose event is the activity begun, said after it.
_BEGINS = re.compile(r"^(?:start(?:s|ed)?|begin|began|begun)$", re.I)


def asked_event(question: str) -> frozenset[str]:
    """The stems of the word naming the event a "when did X …?" question asks about (empty
    when it has another shape)."""
    found = _WHEN_VERB.match(question)
    if not found:
        return frozenset()
    grammar = STOP | FUNCTION_WORDS | PREPOSITIONS
    verb, *after = found.group(1).split()
    if _CARRIES.match(verb) and after[:1] == ["to"] and len(after) > 1:
        verb, *after = after[1:]
    elif _BEGINS.match(verb) and after and (after[0] == "to" or after[0].endswith("ing")):
        # "start reading …", "begin to paint …": the beginning is told by the activity
        # begun ("I'm reading …", "I started volunteering …"), its verb the event.
        verb, *after = after[1:] if after[0] == "to" else after
    if verb.lower() not in grammar:
        return stem_set(verb)
    return stem_set(_phrase_head(after, grammar))


# Words that may close a noun phrase without being its noun ("go to a festival together").
_NOT_HEAD = frozenset("together alone again also too there here".split())


def _phrase_head(words: list[str], grammar: frozenset[str]) -> str:
    """The noun the first phrase of ``words`` ends in: the last of its run of words that are
    not grammar words. English puts a noun's modifiers before it, so "a car accident" names
    an accident and "a pride festival" a festival: a sentence saying only "my old car" or "a
    pride parade" tells of another event."""
    run: list[str] = []
    for word in words:
        if word.lower() in grammar or word.lower() in _NOT_HEAD | PHRASE_EDGE:
            if run:
                break
            continue
        run.append(word)
    return run[-1] if run else ""


def _first_told(ranked: list[tuple[float, float, Said]], by: int) -> tuple[float, float, Said]:
    """Of the ranked sentences best by score (``by`` 0) or share (1), and those within
    TOLD_TIE of it, the one told first: an event is told when it happens and recalled
    later ("My store is open!", then months on "I opened a store")."""

    def measure(entry: tuple[float, float, Said]) -> float:
        return entry[1] if by else entry[0]

    top = max(measure(entry) for entry in ranked)
    near = [entry for entry in ranked if measure(entry) >= TOLD_TIE * top]
    return min(near, key=lambda entry: entry[2].day or datetime.date.max)


# A question of what is planned or coming ("When is X planning to …", "When will …",
# "When is X going to …") and a time said ahead of the day it is said ("next month").
_ASKS_AHEAD = re.compile(
    r"^\s*when\b.*\b(?:plan(?:s|ning|ned)?\s+(?:to|on)|will|going\s+to)\b", re.I
)
# "When is X hosting …?" asks of an arrangement too: "is" with an -ing form speaks ahead.
_ASKS_ARRANGED = re.compile(
    r"^\s*[Ww]hen\s+(?:is|are)\s+[A-Z][\w'’-]*(?:\s+(?:and|&)\s+[A-Z][\w'’-]*)?"
    r"\s+[a-z]+ing\b"
)


def asks_ahead(question: str) -> bool:
    """Whether ``question`` asks when something planned or arranged is to happen."""
    return bool(_ASKS_AHEAD.search(question) or _ASKS_ARRANGED.search(question))


_AHEAD = re.compile(r"\b(?:next|tomorrow|coming|upcoming|soon)\b", re.I)
# A plan said by its verb: "going to", "will", "'ll", "gonna", "plan(ning) to".
_FUTURE_VERB = re.compile(
    r"\b(?:going\s+to|gonna|will|plan(?:s|ning)?\s+(?:to|on))\b|\w['’]ll\b", re.I
)


def _speaks_ahead(s: Said) -> bool:
    """Whether ``s`` speaks of a time ahead: its words for the time say so ("next week",
    "tomorrow"), or it names a time ("this weekend") with a verb of a plan ("I'm going to
    make it this weekend"): a time said with a plan lies ahead of the day it was said."""
    dates = s.dates()
    return any(_AHEAD.search(d.phrase) for d in dates) or bool(
        dates and _FUTURE_VERB.search(s.claim)
    )


_HOW_LONG_AGO = re.compile(r"\bhow\s+long\s+ago\b", re.I)


def _told_by_offset(text: str, when: SaidDate, terms: set[str]) -> SaidDate | None:
    """The day of the asked event when ``text`` dates it from ``when`` ("Current as of 16
    March, two days after the cutover": the cutover was on 14 March); None when the date
    is said of no event the question names so. The date said is then of something else
    (the note, the meeting), and the event's is counted from it."""
    if not when.exact or not when.first or when.first != when.last:
        return None
    at = text.find(when.phrase)
    if at < 0:
        return None
    told = _OFFSET.match(text[at + len(when.phrase) :])
    if not told or not set(analyze(told.group(4))) & terms:
        return None
    count = number_value(told.group(1))
    if not count:
        return None
    days = count * (7 if told.group(2).lower() == "week" else 1)
    step = datetime.timedelta(days=-days if told.group(3).lower() == "after" else days)
    day = when.first + step
    return SaidDate(when.phrase, written_date(day), True, day, day)


# ", two days after the PostgreSQL cutover": a count of days or weeks, and the event.
_OFFSET = re.compile(
    r"^[,\s]*(?:just\s+|only\s+|about\s+)?([\w-]+)\s+(day|week)s?\s+(after|before)\s+"
    r"((?:[\w'’-]+\s*){1,4})",
    re.I,
)


def _stretch_to(text: str, when: SaidDate) -> str:
    """``when`` as the end of the days ``text`` says it closes ("Tuesday 28 to Thursday 30
    April": the month and year are said once, after the last day), written from the first
    day to it; "" when it closes none. Something that lasts days happens on all of them:
    its last day alone is not when it is."""
    if not when.exact or not when.first or when.first != when.last:
        return ""
    at = text.find(when.phrase)
    opened = _STRETCH_OPENS.search(text[:at]) if at > 0 else None
    if not opened:
        return ""
    first = int(opened.group(1))
    if not 1 <= first < when.first.day:
        return ""
    start = when.first.replace(day=first)
    return f"{start:%A} {first} to {when.written}"


# "28 to", "Tuesday 28 to", "from the 3rd until": a first day whose month is said after
# the last.
_STRETCH_OPENS = re.compile(
    r"(?:\b[A-Z][a-z]+day\s+|\bthe\s+)?\b(\d{1,2})(?:st|nd|rd|th)?\s+"
    r"(?:to|until|till|through|-|–|and)\s+(?:(?:[A-Z][a-z]+day|the)\s+)?$"
)


def _restates(found: SaidDate, asked_words: set[str]) -> bool:
    """Whether a date in a sentence only repeats the time the question already names."""
    words = {w.lower() for w in re.findall(r"\w+", found.phrase)}
    return bool(words) and words <= asked_words


def duration(r: Ranking) -> Extracted:
    """The stretch of time the best sentences giving one say, without the words that carry
    it in the sentence ("for 4 years now": "4 years"); else the start a "since" gives."""
    top = r.top("duration")[:3]
    for s in top:
        found = DURATION.search(s.claim)
        if found:
            return _stretch(s.claim, found), [s]
    for s in top:
        found = SINCE.search(s.claim)
        if found:
            return found.group(0).strip(), [s]
    return "", [r.best()]


_CARRIER = re.compile(r"^\s*for\s+|\s+now$", re.I)
# "I started five years ago": "how long" asks the stretch; "ago" only places it before now.
_AGO = re.compile(r"\s+ago$", re.I)
# A stretch given as a range ("30-60 seconds", "two or three weeks") is the whole range: its
# lower bound is written before the number the unit follows.
_RANGE_START = re.compile(
    r"\b(?:\d+(?:\.\d+)?\s*[-–]\s*|(?:\d+|a|one|two|three|four|five|six|seven|eight|nine|ten)"
    r"\s+(?:to|or)\s+)$",
    re.I,
)


def _stretch(text: str, found: re.Match[str]) -> str:
    """The stretch of time ``found`` in ``text`` says, with the lower bound of a range it
    ends and without the words that carry it ("for 4 years now", "5 years ago": "4 years",
    "5 years")."""
    stretch = _AGO.sub("", _CARRIER.sub("", found.group(0))).strip()
    start = _RANGE_START.search(text[: found.start()])
    if start and not re.match(
        r"\s*(?:for|about|around|over|nearly|almost|only|just)\b", found.group(0), re.I
    ):
        return f"{start.group(0)}{stretch}"
    return stretch


# "When does the scheduler run?", "What time do they meet?": the present simple asks when a
# habit recurs, which no date answers (a plan is asked in it too: "When does John plan to
# travel?", answered by a date).
ASKS_HABIT = re.compile(r"^\s*(?:when|what\s+time)\s+(?:does|do)\b", re.I)
HABIT_RANKS = 5  # the sentences read for when a habit recurs


def recurring(r: Ranking) -> Extracted | None:
    """Asked when a habit recurs (ASKS_HABIT), when a sentence saying most of the question
    says it recurs ("runs nightly at 04:00": "nightly at 04:00"); None when none does."""
    if not ASKS_HABIT.match(r.question):
        return None
    said = [
        (found.group(0), s)
        for _score, share, s in r.ranked[:HABIT_RANKS]
        if share >= FIRM_SHARE and (found := RECURRING.search(s.claim or s.text))
    ]
    # The fullest first: "nightly at 04:00" over the "nightly" of a better sentence.
    timed = [(when, s) for when, s in said if re.search(CLOCK, when)]
    for when, s in timed + said:
        return when, [s]
    return None


# "When did X start / begin / take up …?": asked when something still going on began.
_ASKS_START = re.compile(r"^\s*when\s+did\b.*\b(?:start|begin|take\s+up)\b", re.I)
# "I've been playing for about four months now": the present perfect with a stretch that
# reaches the day it is said tells when what goes on began, that stretch before it.
_GOING_ON_FOR = re.compile(
    r"\b(?:I|we|she|he|they)(?:['’]ve|\s+have|['’]s|\s+has)\s+been\s+\w+ing\b[^.!?]{0,40}?"
    r"\bfor\s+(?:about\s+|around\s+|over\s+)?(\w+)\s+(months?|years?)(?:\s+now)?\b",
    re.I,
)


def _begun_by_stretch(r: Ranking) -> Extracted | None:
    """Asked when something began, the month (or year) its start is placed by how long it
    has gone on, said by the speaker of one of the best sentences in the same talk ("I'm
    learning the violin now. … I've been playing for about four months now", said in
    December: August); None when none says so. A stretch said "nearly" or "just under"
    gives no month."""
    if not _ASKS_START.search(r.question):
        return None
    for best in r.near(2):
        for s in r.all:
            if s.item is not best.item or s.speaker != best.speaker or not s.day:
                continue
            found = _GOING_ON_FOR.search(s.claim or s.text)
            count = number_value(found.group(1)) if found else None
            if not found or not count:
                continue
            if found.group(2).lower().startswith("year"):
                return str(s.day.year - int(count)), [best, s]
            month_index = s.day.year * 12 + s.day.month - 1 - int(count)
            return f"{datetime.date(month_index // 12, month_index % 12 + 1, 1):%B %Y}", [best, s]
    return None
