"""The answer taken out of the ranked sentences (kbmem.research.ranking), one extractor per
kind of answer: a date resolved against the day it was said (kbmem.dates.said_dates), a
duration, a number and what it counts, a count of the distinct things the best sentences
name (or of the occasions, asked "how many times"), a person, names gathered, a place, yes
or no with its reason, one of the two things an "A or B?" question offers, a list gathered
across sessions and deduplicated, or for "what" the noun phrase of the kind asked, the
reason asked "why", the object of the preposition the question ends in or of the verb it
asks about, or the phrase that says what the question does not. Spans are found by
the question's grammar and the sentence's, never by lists of topic words. Each returns the
line ("" when it finds none) and the sentences it took it from."""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Callable

from kbmem.dates import (
    MONTHS,
    WEEKDAYS,
    SaidDate,
    anchor_date,
    date_words,
    named_years,
    said_dates,
    written_date,
)
from kbmem.index.late import FUNCTION_WORDS
from kbmem.index.tenant import analyze
from kbmem.research.answer_types import alternatives, asks_doing
from kbmem.research.joint import joint_names, shared_item, speaks_for_both
from kbmem.research.kin import kin
from kbmem.research.meaning import nearness
from kbmem.research.ranking import Ranking
from kbmem.research.said import POINTERS, STOP, points_back
from kbmem.research.shown import pointed, points_at, shown, split_caption
from kbmem.research.spans import (
    CALENDAR,
    DURATION,
    FREQUENCY,
    NEGATION,
    NUMBER,
    PHRASE_WORDS,
    PLACE,
    PREPOSITIONS,
    SINCE,
    TIME_WORD,
    WHERE_CLAUSE,
    coordinated,
    is_novel,
    joined,
    people,
    quoted_title,
    quoted_titles,
    stem_set,
    unit_after,
)
from kbmem.research.types import Said

Extracted = tuple[str, list[Said]]
# The best sentence must say this share of the question's weight for the answer to be firm
# (kbmem.research.direct), and for a yes or no to take its reason from it.
FIRM_SHARE = 0.5
LIST_SHARE = 0.6  # of the best sentence's score, for another sentence's item to join a list
MAX_ITEMS = 6
TOLD_TIE = 0.95  # of the best, for an earlier telling of the same event to answer "when"
DATED_SHARE = 0.6  # of the best share, for a dated sentence to answer "when" over it
# "in the mountains", "at my parents' house": a place said with a determiner, when no
# sentence names one (a grammatical shape, no list of place words).
_LOCATIVE = re.compile(
    r"\b(?:in|at|near|inside|outside)\s+((?:the|a|an|my|our|their|his|her|your)\s+"
    r"[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*)?)",
    re.I,
)


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
        dated.sort(
            key=lambda s: not any(_AHEAD.search(d.phrase) for d in said_dates(s.claim, s.day))
        )
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
        found = [d for d in said_dates(s.claim, s.day) if not _restates(d, asked_words)]
        if found:
            named = [d for d in found if d.exact and re.search(r"\d", d.phrase)]
            exact = named or [d for d in found if d.exact] or found
            near = r.nearest(s.claim, [d.phrase for d in exact])
            when = next(d for d in exact if d.phrase == near)
            if _HOW_LONG_AGO.search(r.question) and when.phrase.lower().endswith("ago"):
                # Asked how long ago, the answer is the stretch as said, then when that was.
                return f"{when.phrase} ({when.written})", [s]
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
        for d in said_dates(o.claim or o.text, o.day)
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
        for d in said_dates(o.claim or o.text, o.day)
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
        if word.lower() in grammar or word.lower() in _NOT_HEAD | _PHRASE_EDGE:
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
_HOW_LONG_AGO = re.compile(r"\bhow\s+long\s+ago\b", re.I)


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
            return _CARRIER.sub("", found.group(0)).strip(), [s]
    for s in top:
        found = SINCE.search(s.claim)
        if found:
            return found.group(0).strip(), [s]
    return "", [r.best()]


_CARRIER = re.compile(r"^\s*for\s+|\s+now$", re.I)


def number(r: Ranking) -> Extracted:
    """A frequency asked "how often"; else the number the best sentences giving one say,
    with what it counts."""
    if re.search(r"\bhow\s+often\b", r.question, re.I):
        for _score, _share, s in r.ranked[:3]:
            found = FREQUENCY.search(s.claim)
            if found:
                return found.group(0), [s]
    for s in r.top("number")[:3]:
        found = NUMBER.search(s.claim)
        if found:
            tail = unit_after(s.claim[found.end() :])
            return f"{found.group(0)} {tail}".strip(), [s]
    return "", [r.best()]


def count(r: Ranking) -> Extracted:
    """How many of the things asked: a number said of them (the largest, when sentences
    say several: a part is shown or told more often than the whole, and a count only grows);
    else, asked "how many times", the distinct days the asked person says the asked thing
    in their own words; else the distinct things the sentences that answer nearly as well
    as the best one name (the items of ``listed``), counted. A number said is kept as said;
    a count made here is written as prose writes one (``count_written``), with what was
    counted."""
    noun = counted_noun(r.question)
    top = r.ranked[0][0]
    # (its value, the count as written, what it counts, the sentence)
    stated: list[tuple[int, str, str, Said]] = []
    for score, _share, s in r.ranked:
        if score < LIST_SHARE * top:
            break
        # An ordinal before the noun counts too: "my fourth tournament" is the fourth of
        # them, so far.
        for found in itertools.chain(NUMBER.finditer(s.claim), _ORDINAL.finditer(s.claim)):
            value = number_value(found.group(0))
            after = re.findall(r"[\w'’-]+", s.claim[found.end() :])[:3]
            at = next((n for n, w in enumerate(after) if noun and stem_set(w) == noun), -1)
            # The counted noun right after the number, or after the words qualifying it
            # ("three young children"), none of them a word that ends the phrase.
            if value is not None and at >= 0 and not set(after[:at]) & (STOP | PREPOSITIONS):
                # An ordinal's noun is one of them: the count names them as the question does.
                ordinal = bool(_ORDINAL.fullmatch(found.group(0)))
                words = [*after[:at], counted_words(r.question)[-1]] if ordinal else after[: at + 1]
                if ordinal and value == 1:
                    words[-1] = _singular(words[-1])
                # A number said is kept as its speaker said it ("3", "three"); an ordinal
                # says the count only by its place, which is written as a count.
                said = count_written(value) if ordinal else found.group(0).lower()
                stated.append((value, said, " ".join(words), s))
    if stated:
        _value, said, unit, s = max(stated, key=lambda v: v[0])
        return f"{said} {unit}", [s]
    times = noun == stem_set("times")
    if times:
        days = _occasions(r)
        if days:
            return f"{times_written(len(days))}: {_days_written(sorted(days))}", list(days.values())
    items, sources = _items(r, per_session=times)
    if not items:
        return "", [r.best()]
    distinct = list(dict.fromkeys(items))
    # What was counted, named as the question names it ("two ridges: Storr, Quiraing").
    counted = times_written(len(items)) if times else _counted_as(len(items), r.question)
    return f"{counted}: {', '.join(distinct)}", sources


# A count is written as English prose writes one: a whole number under ten in words, larger
# ones in digits (the common newspaper and book style), and how many times as "once",
# "twice" or "N times" — the way a person answers "how many times …?".
_SMALL = "zero one two three four five six seven eight nine".split()


def count_written(value: int) -> str:
    """``value`` as prose writes a count: "three", "12"."""
    return _SMALL[value] if 0 <= value < len(_SMALL) else str(value)


def times_written(value: int) -> str:
    """How many times, as said: "once", "twice", "three times", "12 times"."""
    return {1: "once", 2: "twice"}.get(value) or f"{count_written(value)} times"


def _counted_as(value: int, question: str) -> str:
    """The count with the noun the question counts ("two ridges"), or the number alone
    when the question names none."""
    words = counted_words(question)
    if words and value == 1:
        words = [*words[:-1], _singular(words[-1])]
    return " ".join([count_written(value), *words]) if words else count_written(value)


def _singular(noun: str) -> str:
    """The singular of a regular English plural ("dogs" → "dog", "stories" → "story",
    "boxes" → "box"); other words as they are."""
    for plural, single in (("ies", "y"), ("sses", "ss"), ("shes", "sh"), ("ches", "ch")):
        if noun.endswith(plural):
            return noun[: -len(plural)] + single
    if re.search(r"[^s]xes$", noun):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def _days_written(days: list[datetime.date]) -> str:
    """Days as people list them, the year said once: "6 July, 20 July 2023"."""
    return ", ".join(
        f"{d.day} {d:%B}"
        + (f" {d.year}" if n == len(days) - 1 or days[n + 1].year != d.year else "")
        for n, d in enumerate(days)
    )


_COUNT_AUX = re.compile(
    r"\b(?:has|have|had|does|do|did|is|are|was|were|will|would|can|could|should|in|of|at|on|"
    r"for|from|with|to|by|during|since|between)\b"
)


def counted_noun(question: str) -> frozenset[str]:
    """The stem of the noun "how many" asks about: the last word of the phrase after it,
    before the verb or preposition that follows ("How many video games has …" → game)."""
    words = counted_words(question)
    return stem_set(words[-1]) if words else frozenset()


def counted_words(question: str) -> list[str]:
    """The words of the phrase "how many" asks about ("video games"), [] if none."""
    m = re.search(r"\bhow\s+many\s+((?:[\w'’-]+\s*){1,3})", question, re.I)
    if not m:
        return []
    words: list[str] = []
    for w in m.group(1).split():
        if _COUNT_AUX.fullmatch(w.lower()) or (words and w.lower().endswith("ed")):
            break
        words.append(w)
    return words


_NUMBER_WORDS = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
} | {"once": 1, "twice": 2, "dozen": 12}


_ORDINALS = {
    w: n
    for n, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split(),
        start=1,
    )
}
_ORDINAL = re.compile(r"\b(?:\d+(?:st|nd|rd|th)|" + "|".join(_ORDINALS) + r")\b", re.I)


def number_value(word: str) -> int | None:
    """The whole number a number word, an ordinal ("fourth", "4th") or digits say; None
    for others ("3.5", "hundred")."""
    if word.isdigit():
        return int(word)
    low = word.lower()
    if re.fullmatch(r"\d+(?:st|nd|rd|th)", low):
        return int(low[:-2])
    return _NUMBER_WORDS.get(low, _ORDINALS.get(low))


_FIRST_PERSON = re.compile(r"\b(?:I|me|my|we|us|our|I'm|I've|we're|we've)\b", re.I)


def _occasions(r: Ranking) -> dict[datetime.date, Said]:
    """The days on which a sentence says, in its own words (a picture's caption shows,
    it does not tell of a time), the most telling of the question's nouns (else words)
    other than the names, within the time the question names; asked about a speaker, said
    by them of themselves. Each day is one occasion, unless the time gone by that its
    sentence tells of reaches the day of another: the same event told again."""
    about = r.weigher.terms - r.weigher.names - r.speakers - stem_set("times")
    if not about:
        return {}
    # The thing done is named by a noun (the word after a determiner: "gone to the beach"),
    # the doing by verbs said of many things.
    nouns = {
        t
        for m in re.finditer(
            r"\b(?:the|a|an|my|our|his|her|their|its)\s+([\w'’-]+)", r.question, re.I
        )
        for t in analyze(m.group(1))
    } & about
    rarest = max(nouns or about, key=lambda t: r.weigher.weight[t])
    years = named_years(r.question)
    days: dict[datetime.date, Said] = {}
    spans: list[tuple[datetime.date, datetime.date]] = []
    for _score, _share, s in r.ranked:
        own = s.claim.split("[shares", 1)[0]
        if not s.day or rarest not in set(analyze(own)):
            continue
        if r.windows and not any(w.contains(s.day) for w in r.windows):
            continue
        if years and s.day.year not in years:
            continue
        # What the person asked about did is told by them, of themselves (a sentence to
        # another, "the beach inspired you", tells of the listener's time).
        if r.asked_speakers and not (
            set(analyze(s.speaker)) & r.asked_speakers and _FIRST_PERSON.search(own)
        ):
            continue
        # An event told again later ("remember the lake last week?") is the one told then:
        # a telling whose past time reaches the day of another counts once.
        span = _told_span(own, s.day)
        if any(span[0] <= last and first <= span[1] for first, last in spans):
            continue
        spans.append(span)
        days[s.day] = s
    return days


def _told_span(text: str, day: datetime.date) -> tuple[datetime.date, datetime.date]:
    """The days the event ``text`` tells of may lie in: the times gone by it places on the
    calendar, with the day it was told; that day alone when it places none."""
    past = [d for d in said_dates(text, day) if d.first and d.last and d.first <= day]
    if not past:
        return day, day
    return min(d.first for d in past if d.first), max(day, *(d.last for d in past if d.last))


def person(r: Ranking) -> Extracted:
    exclude = r.weigher.names
    shared = shared_item(r, lambda s: people(s.claim, exclude | r.speakers, r.known))
    if shared:
        return shared  # "Who is Ilse and Tomas's favourite singer?": whom both name
    best = r.best()
    if not people(best.claim, exclude, r.known):
        # The sentence that says most of the question tells of someone by relation ("My
        # mom and I made dinner last night"): it answers "who" over a name another sentence
        # gives, most often the listener's ("Wow, John!").
        whose, kinship = kin(best.claim, best.speaker)
        if kinship and not set(analyze(kinship)) & r.weigher.terms:
            # "my aunt" is "my aunt, Rosa" where its speaker names her.
            return named_elsewhere(r, best, kinship) or (f"{whose} {kinship}", [best])
    for s in r.close_to_best("person"):
        found = people(s.claim, exclude, r.known)
        if found:
            return r.nearest(s.claim, found), [s]
    # No name: a person said by relation, the subject a sentence opens with ("My aunt
    # believed in volunteering": the speaker's aunt).
    for _score, _share, s in r.ranked[:3]:
        relation = _RELATION.match(s.claim)
        if relation and not set(analyze(relation.group(2))) & r.weigher.terms:
            named = named_elsewhere(r, s, relation.group(2))
            if named:
                return named
            whose = relation.group(1)
            owner = f"{s.speaker}'s" if whose.lower() in ("my", "our") else whose
            return f"{owner} {relation.group(2)}".strip(), [s]
    # "Who ...?" answered in the first person: the speaker is the person.
    for _score, _share, s in r.ranked[:3]:
        if re.match(r"(?:I|I'm|I've|We)\b", s.claim) and not set(analyze(s.speaker)) & exclude:
            return s.speaker, [s]
    return "", [r.best()]


_RELATION = re.compile(
    r"^\s*(my|our|his|her|their)\s+([a-z][\w'’-]*)\b(?!\s+(?:is|was|has)\b)", re.I
)


def names(r: Ranking) -> Extracted:
    """The names (not the question's own) that the sentences answering nearly as well as
    the best one give, gathered and deduplicated."""
    # The speakers are who talk, not whom they name.
    exclude = r.weigher.names | r.speakers
    return _gathered(
        r,
        lambda s: untitled_people(s.claim, exclude, r.known),
        lambda name, found: name not in found,
    )


def untitled_people(text: str, exclude: set[str], known: frozenset[str]) -> list[str]:
    """The names ``text`` gives (spans.people) outside the titles it quotes: words in
    quotes are a work's title ("Charlotte's Web"), not whom it names."""
    titles = quoted_titles(text)
    return [n for n in people(text, exclude, known) if not any(n in t for t in titles)]


def _gathered(
    r: Ranking,
    items_of: Callable[[Said], list[str]],
    is_new: Callable[[str, list[str]], bool],
) -> Extracted:
    """The items ``items_of`` finds in the sentences answering nearly as well as the best
    one (at least LIST_SHARE of its score), in their order, each once (``is_new``), at most
    MAX_ITEMS; and the sentences that gave them."""
    top = r.ranked[0][0]
    found: list[str] = []
    sources: list[Said] = []
    for score, _share, s in r.ranked:
        if score < LIST_SHARE * top or len(found) == MAX_ITEMS:
            break
        new = [item for item in items_of(s) if item and is_new(item, found)]
        if new:
            found += new[: MAX_ITEMS - len(found)]
            sources.append(s)
    return ", ".join(found), sources


_APPOSITION = re.compile(r"\s*,\s*([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)\s*(?:[.,;:!?)]|$)")


def place(r: Ranking) -> Extracted:
    """A place the best sentence reaches through what happens there, else one a sentence
    near the best names, else one said with a determiner ("in the mountains")."""
    shared = shared_item(r, lambda s: _places(r, s))
    if shared:
        return shared  # "Which city have both Ilse and Tomas visited?"
    if re.match(r"\s*where\s+(?:has|have)\b", r.question, re.I):
        return _places_gathered(r)
    bridged = _bridged_place(r)
    if bridged:
        return bridged
    for s in r.close_to_best("place", 5):
        places = _places(r, s)
        if places:
            return r.nearest(s.claim, places), [s]
    for _score, _share, s in r.ranked[:3]:
        found = _said_place(r, s)
        if found:
            # "since I moved from my home country": which country, its speaker names
            # where they say it again.
            return named_elsewhere(r, s, found.split(None, 1)[-1]) or (found, [s])
    return "", [r.best()]


# A noun phrase said with a possessive ("my old area", "our home country") describes what
# it is; its speaker may name it where they say it again, the name set beside it.
_POSSESSIVE = r"(?:my|our|his|her|their)"


def named_elsewhere(r: Ranking, s: Said, phrase: str) -> Extracted | None:
    """The name ``s``'s speaker gives, in another sentence, to the ``phrase`` ``s`` says
    with a possessive ("my old area" — "my old area, West County"); None when ``s`` says it
    without one or no sentence names it."""
    said = re.compile(rf"\b{_POSSESSIVE}\s+{re.escape(phrase)}\b", re.I)
    if not said.search(s.claim or s.text):
        return None
    for other in r.all:
        if other is s or other.speaker != s.speaker:
            continue
        for found in said.finditer(other.text):
            if not _NAME_AFTER.match(other.text[found.end() :]):
                continue  # a name or a title, not a phrase set beside it
            named = _named(other.text[found.end() :], r.weigher.terms | r.weigher.names)
            if named:
                return named, [s, other]
    return None


def _said_place(r: Ranking, s: Said) -> str:
    """A place ``s`` says with a determiner ("in the mountains"), or the name set beside
    it ("in my home country, Sweden"); "" if none says more than the question."""
    exclude = r.weigher.names | r.weigher.terms
    for found in _LOCATIVE.finditer(s.claim):
        head, *words = found.group(1).split()
        # The noun phrase ends where a function or time word begins ("the mountains
        # last week").
        kept = list(itertools.takewhile(lambda w: is_novel(w, set(), set()), words))
        named = _APPOSITION.match(s.claim[found.end() :])
        if kept and named and set(analyze(named.group(1))) - exclude:
            return named.group(1)
        if kept and set(analyze(" ".join(kept))) - exclude:
            return " ".join([head, *kept])
    return ""


def _places_gathered(r: Ranking) -> Extracted:
    """Asked "where has X been?", the perfect asks for what has accumulated: the places
    the sentences answering nearly as well as the best one name, each once."""

    def place_of(s: Said) -> list[str]:
        named = _places(r, s)
        return [r.nearest(s.claim, named) if named else _said_place(r, s)]

    def is_new(place: str, found: list[str]) -> bool:
        key = stem_set(place)
        return not any(key & stem_set(f) for f in found)

    return _gathered(r, place_of, is_new)


def _bridged_place(r: Ranking) -> Extracted | None:
    """A place the best sentence names only by what happens there ("in the city where
    my sister lives"): the named place of the sentence that says that (who said it
    counts: "I'm flying to Tromsø to see my sister")."""
    best = r.best()
    found = WHERE_CLAUSE.search(best.claim)
    if not found:
        return None
    clause = set(analyze(found.group(1))) - set(analyze(" ".join(STOP)))
    if best.speaker and re.search(r"\b(?:my|our)\b", found.group(1), re.I):
        clause |= set(analyze(best.speaker))
    for s in r.all:
        said = set(analyze(s.text)) | set(analyze(s.speaker))
        if s is best or len(clause & said) < min(2, len(clause)):
            continue
        places = _places(r, s)
        if places:
            return r.nearest(s.text, places), [best, s]
    return None


def _places(r: Ranking, s: Said) -> list[str]:
    exclude = r.weigher.names | r.weigher.terms
    return [
        found.group(1)
        for found in PLACE.finditer(s.claim or s.text)
        if not set(analyze(found.group(1))) <= exclude
        and found.group(1).split()[0].lower() not in STOP | CALENDAR
        and not found.group(1).endswith(("'s", "’s"))
    ]


def yesno(r: Ranking) -> Extracted:
    """Yes, or no when the best sentence and the question differ in negation; "likely"
    for a question that asks what would or could be; the reason from the sentence when it
    says enough of the question (FIRM_SHARE) to be one."""
    best = r.best()
    text = best.claim if not points_back(best.claim) else f"{best.before} {best.claim}"
    # A sentence that says little of the question is about something else: its negation
    # ("we didn't share much") says nothing of the answer's (the line says it is weak).
    said = r.ranked[0][1] >= FIRM_SHARE
    negated = said and (
        bool(NEGATION.search(text.lower())) != bool(NEGATION.search(r.question.lower()))
    )
    verdict = "No" if negated else "Yes"
    hedge = "Likely " if re.search(r"\b(?:would|could|might|likely)\b", r.question, re.I) else ""
    # A sentence that says little of the question gives no reason: words taken from it
    # would read as one (the line then says the evidence is weak, kbmem.research.direct).
    reason = _said_reason(r, text) if said else ""
    if joint_names(r.question) and not speaks_for_both(text):
        # Asked of two people, one person's sentence is half the answer: its clause is no
        # reason for both (the verdict stands on the sentences that ranked).
        reason = ""
    head = f"{hedge}{verdict.lower()}" if hedge else verdict
    return f"{head}; {reason}" if reason else head, [best]


_CLAUSE_CUT = re.compile(r"\s*(?:[,;:!?]|\s[-–—]\s|\bbut\b|\bso\b|\bbecause\b)\s*", re.I)
_LEAD = re.compile(r"^(?:(?:yes|yeah|yep|no|nope|oh|well|and|also|actually)\b[\s,!.]*)+", re.I)


def _said_reason(r: Ranking, text: str) -> str:
    """The reason a yes or no rests on, in the evidence's words: the clause of ``text`` that
    says most the question does not ("I didn't finish, my knee gave out": "my knee gave
    out"), at most REASON_WORDS words."""
    # A picture's caption is what was shown: its words count as said.
    plain = re.sub(r"\\?\[shares an image:\s*(.*?)\\?\]", r": \1", text)
    clauses = [_LEAD.sub("", c.strip(" .")) for c in _CLAUSE_CUT.split(plain)]
    clauses = [c for c in clauses if c]
    if not clauses:
        return ""
    best = max(clauses, key=r.news)  # the first of equals
    if not r.news(best):
        # Nothing but the question's words: the clause that says them is the reason.
        best = max(clauses, key=lambda c: len(set(analyze(c)) & r.weigher.terms))
    return " ".join(best.split()[:REASON_WORDS])


def choice(r: Ranking) -> Extracted:
    """Of the two things the question offers ("a beach or the mountains"), the one the
    ranked sentences say more for (each sentence counting by its score); the words both
    share ("park" of "national park or theme park") tell nothing."""
    offered = alternatives(r.question)
    if offered is None:
        return "", [r.best()]
    terms = [set(analyze(o)) for o in offered]
    own = [terms[0] - terms[1], terms[1] - terms[0]]
    support = [0.0, 0.0]
    sources: list[list[Said]] = [[], []]
    for score, share, s in r.ranked:
        said = set(analyze(s.claim))
        # A sentence counts by what it says itself: one leaning on the sentence before it
        # ("A lake is fine" after "I miss the sea") does not speak for what that one says.
        itself = score * r.weigher.share(s, before=False) / share if share else 0.0
        for n in (0, 1):
            if own[n] & said:
                support[n] += itself
                sources[n].append(s)
    if support[0] == support[1]:
        return "", [r.best()]
    n = 0 if support[0] > support[1] else 1
    return offered[n], sources[n][:3]


def listed(r: Ranking) -> Extracted:
    """One item from each sentence that answers nearly as well as the best, gathered
    across sessions and deduplicated."""
    items, sources = _items(r)
    return ", ".join(_shared_head_once(items, asked_noun(untimed(r.question)))), sources


def _shared_head_once(items: list[str], noun: str) -> list[str]:
    """``items`` with the noun the question asks about said once, after the last of them,
    when every item ends in it ("kundalini yoga, aerial yoga": "kundalini, aerial yoga"),
    as people list the kinds of one thing; the question already names it."""
    stems = stem_set(noun) if noun else frozenset()
    if len(items) < 2 or not stems:
        return items
    heads = [item.rsplit(None, 1) for item in items]
    if not all(len(h) == 2 and stem_set(h[1]) == stems for h in heads):
        return items
    return [h[0] for h in heads[:-1]] + [items[-1]]


def _items(r: Ranking, per_session: bool = False) -> tuple[list[str], list[Said]]:
    """The distinct things the sentences scoring LIST_SHARE of the best one's say (a
    sentence that points back speaks through the one before it): the object of the verb
    the question asks about where a sentence says it, else its short phrase that says most
    the question does not; and their sentences. ``per_session``: a thing said again in
    another session counts again."""
    top = r.ranked[0][0]
    items: list[str] = []
    seen: list[tuple[str, frozenset[str]]] = []
    sources: list[Said] = []
    # An item is of what is asked, not only of whom: its sentence (or the one it points
    # back to) says one of the question's words other than the names it gives, unless
    # the item is a name or title itself.
    about = r.weigher.terms - r.weigher.names - r.speakers
    candidates: list[tuple[Said, str, int]] = []
    unasked: list[tuple[Said, str, int]] = []  # members whose sentence says no such word
    for score, _share, s in r.ranked:
        if score < LIST_SHARE * top:
            break
        text = s.before if points_back(s.claim) else s.claim
        typed, level = _typed_item(r, text)
        if text is not s.claim:
            # "I made some peach cobbler recently, it was great": a sentence with a pointer
            # and few words of its own may still give the thing asked in its own clause,
            # which is what it tells; only a sentence that gives none speaks through the
            # one before it.
            own, own_level = _typed_item(r, s.claim)
            if own_level >= MEMBER:
                text, typed, level = s.claim, own, own_level
        # A name or a title is a thing of the kind asked in itself: "a short trip to Rome"
        # answers "which cities has Jon visited?" without the question's words.
        if level != NAMED and about and not set(analyze(text)) & about:
            if level >= MEMBER:
                unasked.append((s, typed, level))
            continue
        candidates.append((s, typed or r.novel(text, 3, whole_list=False), level))
    candidates += _named_below_bar(r, top) + _members_by_meaning(r, unasked)
    # Items are things of one kind: once a sentence gives what the question's grammar asks
    # for (its verb's object, a noun of the kind asked, a title, a name), the phrases taken
    # from sentences that give none are fragments, not items; once one names a member of
    # the class asked, a phrase naming the class itself ("fun activities") is none either
    # (names and other members alike are members).
    best_level = min(max((level for _s, _item, level in candidates), default=0), MEMBER)
    candidates = [c for c in candidates if c[2] >= best_level]
    noun = stem_set(asked_noun(untimed(r.question)))
    if noun and any(_ends_in(item, noun) for _s, item, _level in candidates):
        # Members named with the noun asked ("the dog shelter" for "what shelters"): a
        # person's name said elsewhere is of another kind (who was met there).
        candidates = [
            (s, item, level)
            for s, item, level in candidates
            if level != NAMED or _ends_in(item, noun) or item in quoted_titles(s.claim)
        ]
    candidates = _of_class_asked(r, candidates)
    for s, said, _typed in candidates:
        # A dash ends the item: what follows is said of it ("piano - it's a learning curve").
        item = _DASH.split(said, 1)[0]
        key = stem_set(item) - r.weigher.terms
        where = s.session or s.item.page_id if per_session else ""
        if not key or any(key & k for w, k in seen if w == where):
            continue
        seen.append((where, key))
        items.append(item)
        sources.append(s)
        if len(items) == MAX_ITEMS:
            break
    return items, sources


# A list item far in meaning from the class asked: nearer than CLASS_NEAR, or than
# CLASS_SHARE of the nearest item, keeps it (see _of_class_asked).
CLASS_NEAR = 0.3
CLASS_SHARE = 0.6
_ITEM_CUT = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?")


def _of_class_asked(
    r: Ranking, candidates: list[tuple[Said, str, int]]
) -> list[tuple[Said, str, int]]:
    """``candidates`` (sentence, item, level) without the items far in meaning from the
    class the question asks the members of ("what instruments": "clarinet" stays, "water"
    and "games" go): grammar finds a verb's object or a noun phrase, not whether it is of
    the kind asked. An item goes only when it is far from the class in itself and far
    below the nearest item, so a class the model reads poorly ("activities") loses none;
    a quoted title is kept, since its words do not say what it names, and so are the
    phrases of sentences that give nothing typed."""
    kind = asked_class(untimed(r.question))
    parts = [_ITEM_CUT.split(_DASH.split(item, 1)[0]) for _s, item, _level in candidates]
    phrases = [p for ps in parts for p in ps if p]
    if not kind or not phrases:
        return candidates
    near = dict(zip(phrases, nearness(kind, phrases), strict=True))
    bar = min(CLASS_NEAR, CLASS_SHARE * max(near.values()))
    kept: list[tuple[Said, str, int]] = []
    for (s, item, level), ps in zip(candidates, parts, strict=True):
        if level == UNTYPED or item in quoted_titles(s.claim):
            kept.append((s, item, level))
            continue
        # An item that holds a list ("hikes, hanging, picnics") is judged item by item.
        near_enough = [p for p in ps if p and near[p] >= bar]
        if near_enough:
            kept.append((s, ", ".join(near_enough), level))
    return kept


# A name from a sentence below the list's bar, down to NAMED_FLOOR of the best sentence's
# score, joins the list when it is this near in meaning to the class asked; so does a
# member from a sentence that says none of the question's words (_members_by_meaning).
NAMED_FLOOR = 0.4
NAMED_NEAR = 0.5


def _named_below_bar(r: Ranking, top: float) -> list[tuple[Said, str, int]]:
    """The names of things of the class asked (see asked_class) that sentences scoring
    between NAMED_FLOOR and LIST_SHARE of the best one give ("a road trip to Oregon" for
    "what states …?"). A list gathers across sessions, and a sentence that names one
    member says little else of the question; a name the model reads as a member of the
    class asked is as sure an item as one from a sentence above the bar. First names and
    titles, which the model cannot place, never come near."""
    kind = asked_class(untimed(r.question))
    if not kind:
        return []
    found: list[tuple[Said, str, int]] = []
    for score, _share, s in r.ranked:
        if score >= LIST_SHARE * top:
            continue
        if score < NAMED_FLOOR * top:
            break
        item, level = _typed_item(r, s.before if points_back(s.claim) else s.claim)
        if level == NAMED and item not in quoted_titles(s.claim):
            found.append((s, item, level))
    near = nearness(kind, [item for _s, item, _level in found])
    return [named for named, v in zip(found, near, strict=True) if v >= NAMED_NEAR]


def _members_by_meaning(
    r: Ranking, unasked: list[tuple[Said, str, int]]
) -> list[tuple[Said, str, int]]:
    """Of the members found in sentences that say none of the question's words but names
    (``unasked``: "We love going for hikes and having picnics" for "what activities does
    the family enjoy?"), those the embedder reads as near the class asked (NAMED_NEAR):
    what the sentence names is then of what is asked, though it does not say so."""
    kind = asked_class(untimed(r.question))
    if not kind:
        return []
    near = nearness(kind, [item for _s, item, _level in unasked])
    return [member for member, v in zip(unasked, near, strict=True) if v >= NAMED_NEAR]


def asked_class(question: str) -> str:
    """The class a "what Ns …?" question asks the members of, with the words that qualify
    it ("European countries", "events for veterans"); "" when the question names none
    ("What does X do …?")."""
    found = _ASKED_NOUN.match(question.strip())
    if not found or not asked_noun(question):
        return ""
    words = found.group(1).split()
    if words[0].lower() in _AUXILIARIES:
        return ""
    return " ".join(words)


_AUXILIARIES = frozenset("is are was were do does did has have had can could would will".split())


def _ends_in(phrase: str, stems: frozenset[str]) -> bool:
    """Whether ``phrase``'s last word is of ``stems`` (its head noun is the one asked)."""
    words = re.findall(r"[\w'’-]+", phrase)
    return bool(words) and stem_set(words[-1]) == stems


_DASH = re.compile(r"\s+[-–—]+(?:\s+|$)|\s*[–—]\s*")


# How surely an item is one of the things a list question asks for (_typed_item): none
# of the kind asked, a phrase naming their class, a member of it, a member by its name or
# title.
UNTYPED, CLASS, MEMBER, NAMED = 0, 1, 2, 3


def _typed_item(r: Ranking, text: str) -> tuple[str, int]:
    """What ``text`` gives of the kind a list question asks for: the object of its verb,
    the noun phrase of the noun it asks about ("what instruments": "a bass guitar"), a
    title in quotes, or a name; else a phrase naming the class asked (see _names_class);
    "" if none. With how surely it is one (NAMED, MEMBER, CLASS, UNTYPED)."""
    asked = r.weigher.terms | r.weigher.names
    noun = asked_noun(untimed(r.question))
    grouped = ""
    found = done_object(untimed(r.question), text, asked)
    if found and not _names_class(found, noun):
        return found, MEMBER
    grouped = found
    if noun:
        found = noun_phrase(text, noun, asked)
        if found and not _names_class(found, noun):
            return found, MEMBER
        grouped = grouped or found
    if asks_doing(r.question) or _is_activity(noun):
        # "What does X do …?": the things done are activities, named by their -ing form.
        doing = _gerunds(text, asked)
        if doing:
            return ", ".join(doing), MEMBER
    title = quoted_title(text, asked)
    if title:
        return title, NAMED
    named = [n for n in map(_untimed_name, people(text, asked | r.speakers, r.known)) if n]
    if named:
        return named[0], NAMED
    return (grouped, CLASS) if grouped else ("", UNTYPED)


def _is_activity(noun: str) -> bool:
    return noun.lower() in ("activity", "activities")


def _gerunds(text: str, asked: set[str]) -> list[str]:
    """Every activity ``text`` names by an -ing form (see gerund), in its order."""
    found: list[str] = []
    # A picture's caption describes the scene shown ("a person holding a frisbee"): its
    # -ing forms say what someone in it is doing at that instant, no activity told of.
    rest = _CAPTION.sub("", text)
    while True:
        doing = gerund(rest, asked)
        if not doing:
            return found
        found.append(doing)
        rest = rest[rest.find(doing.split()[-1]) + len(doing.split()[-1]) :]


_CAPTION = re.compile(r"\\?\[shares an image:[^\]]*\]?")


def _untimed_name(name: str) -> str:
    """``name`` without the time words and prepositions a sentence capitalised before it
    ("Last Monday", "During Thanksgiving": Thanksgiving); "" when it names a time."""
    words = name.split()
    while words and (TIME_WORD.match(words[0]) or words[0].lower() in PREPOSITIONS | CALENDAR):
        words.pop(0)
    return " ".join(words) if words and words[0][0].isupper() else ""


def _names_class(phrase: str, noun: str) -> bool:
    """Whether ``phrase`` names the plural class a list question asks the members of
    ("favorite cities", "fun activities" for "which cities …", "what activities …"): it
    says the asked noun in the plural, as the question does. A member is one thing, named
    in the singular ("a live music event") or by its name."""
    return _is_plural(noun.lower()) and noun.lower() in phrase.lower().split()


def _is_plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith("ss")


# "What kind of flooring is …", "What book did …": the noun whose kind the question asks
# for, before the verb or auxiliary that follows it.
_ASKED_NOUN = re.compile(
    r"^(?:(?:in|on|at|for|with|from|to|by|of)\s+)?(?:what|which)\s+"
    r"(?:(?:kind|type|sort|form|style)s?\s+of\s+)?"
    r"((?:[a-z][\w'’-]*\s+){0,2}?[a-z][\w'’-]*)\s+"
    r"(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will|should)\b",
    re.I,
)
# English's closed classes of determiners, prepositions and conjunctions: a noun phrase
# starts after them.
_PHRASE_EDGE = frozenset(
    "a an the this that these those my your his her its our their some any each every no "
    "after before during since until through across along among between against without "
    "within upon via per and or but nor plus yet".split()
)


# A time the question names at its end ("… accepted for on May 23, 2023?", "… in July
# 2023?", "… last weekend?") says when, not what: the question's grammar is read without it.
_TRAILING_TIME = re.compile(
    r"(?:\s+(?:on|in|during|at|around|by|since|until|before|after))?"
    r"(?:\s+(?:the|of|\d{1,4}(?:st|nd|rd|th)?|"
    + "|".join(sorted(set(MONTHS) | set(WEEKDAYS)))
    + r"|last|this|next|past|week|weekend|month|year|summer|winter|spring|fall|autumn"
    r"|yesterday|today|recently|ago),?)+\s*\?*\s*$",
    re.I,
)


def untimed(question: str) -> str:
    """``question`` without the times it names at its end (see _TRAILING_TIME)."""
    shorter = question.strip()
    while True:
        question, shorter = shorter, _TRAILING_TIME.sub("?", shorter)
        if shorter == question:
            return question


def asked_noun(question: str) -> str:
    """The noun a "what N …?" or "what kind of N …?" question asks about ("" if none)."""
    found = _ASKED_NOUN.match(question.strip())
    if not found:
        return ""
    # A phrase of a preposition after the noun qualifies it ("what events for veterans"):
    # the noun asked about is the one before it.
    words = list(
        itertools.takewhile(lambda w: w.lower() not in PREPOSITIONS, found.group(1).split())
    )
    head = words[-1] if words else found.group(1).split()[-1]
    return "" if head.lower() in STOP else head


def _recalled(r: Ranking, noun: str) -> Extracted | None:
    """The title the listener gave the ``noun`` a top sentence recalls by what they did to
    it ("Been reading that book you recommended": the listener's "I loved 'Becoming
    Nicole' … Highly recommend it"): the title their sentence saying that verb gives, or
    the nearest one before it in its turn; None when no sentence near the best recalls one
    so."""
    recalls = re.compile(
        rf"\b(?:the|that|this|those)\s+{re.escape(noun)}s?\s+you\s+([a-z]+)\b", re.I
    )
    asked = r.weigher.terms | r.weigher.names
    top = r.ranked[0][0]
    # A recalling sentence says little of the question ("that book"), so any near the best.
    for _score, _share, s in (entry for entry in r.ranked if entry[0] >= 0.5 * top):
        found = recalls.search(s.claim)
        if not found:
            continue
        verb = set(analyze(found.group(1)))
        for other in r.all:
            if other.speaker == s.speaker or not verb & set(analyze(other.text)):
                continue
            # "Highly recommend it!": what "it" is, its turn said before.
            turn = [
                o
                for o in r.all
                if o.item is other.item and (o.start, o.end) == (other.start, other.end)
            ]
            told = turn[: turn.index(other) + 1] if other in turn else [other]
            for said in reversed(told):
                title = quoted_title(said.text, asked)
                if title:
                    return title, [s, said]
    return None


def compound_kind(question: str) -> str:
    """The noun before the head of a compound a "what N …?" question asks about ("career"
    of "what career path"): the kind of thing the head is; "" if the noun is no compound."""
    found = _ASKED_NOUN.match(question.strip())
    if not found:
        return ""
    said: list[str] = found.group(1).split()
    words = list(itertools.takewhile(lambda w: w.lower() not in PREPOSITIONS, said))
    if len(words) < 2 or words[-2].lower() in STOP | _PHRASE_EDGE:
        return ""
    return words[-2]


def taken_as(text: str, noun: str, asked: set[str]) -> str:
    """The phrase ``text`` takes as a ``noun`` ("looking into counseling and mental health
    as a career": "counseling and mental health"), back to the verb or preposition before
    it (at most OBJECT_WORDS words); "" if none says what the question (its terms
    ``asked``) does not."""
    stems = set(analyze(noun))
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n in range(2, len(tokens) - 1):
        if not (
            tokens[n].lower() == "as"
            and tokens[n + 1].lower() in ("a", "an")
            and n + 2 < len(tokens)
            and set(analyze(tokens[n + 2])) == stems
        ):
            continue
        start = n
        while (
            start > 0
            and n - start < OBJECT_WORDS
            and re.match(r"[\w'’-]+$", tokens[start - 1])
            and tokens[start - 1].lower() not in (STOP - {"and"}) | PREPOSITIONS | _SUBJECT_WORDS
        ):
            start -= 1
        words = _trim_end(tokens[start:n])
        while words and words[0].lower() == "and":
            words = words[1:]
        if words and set(analyze(" ".join(words))) - asked:
            return " ".join(words)
    return ""


# "What is X's favourite style of dance?", "What was the setback …?": a form of "be", then
# the noun phrase the answer is equated with; its head is the last word before the end of
# the question or the preposition or clause that qualifies it.
_EQUATED = re.compile(
    r"^\s*[Ww]hat\s+(?:is|was|are|were)\s+(?:one\s+of\s+)?"
    r"(?:[Tt]he|his|her|their|[\w'’-]+['’]s?)\s+((?:[a-z][\w'’-]*\s+){0,3}?)([a-z][\w'’-]*)"
    r"\s*(?:\?|$|\s+(?:of|for|from|in|on|at|to|about|towards?|with|that|behind|as)\b"
    r"|\s+(?=[A-Z]))"  # a clause whose subject is named: "the biggest challenge John faced"
)


def equated_noun(question: str) -> str:
    """The head of the noun phrase a "what is/was …?" question equates its answer with
    ("" if the question has another shape)."""
    found = _EQUATED.match(question)
    if (
        not found
        or found.group(2).lower() in STOP | FUNCTION_WORDS
        or _STRANDED_PREPOSITION.search(question)
    ):
        return ""
    return found.group(2)


_COPULA_AFTER = re.compile(
    r"^\s+(?:is|was|are|were|has\s+been|have\s+been)\s+(?:(?:when|that|how)\s+)?([^.;!?]{2,})",
    re.I,
)
EQUATED_WORDS = 8
# "This necklace is a gift from my grandma", "This necklace is special - a gift from …": the
# subject a form of "be" (or a dash after its complement) equates with the noun that
# follows, after its determiner and modifiers.
_EQUATED_SUBJECT = re.compile(
    r"^(?:[\w'’-]+\s*,\s*)?(?:this|that|these|those|the|my|our|his|her|their)\s+"
    r"((?:[\w'’-]+\s+){0,2}?[\w'’-]+)\s+(?:is|was|are|were)\b(?:[^.;!?\-–—]*\s[-–—]\s*|\s+)"
    r"(?:a|an|the|my|our|his|her|their)\s+(?:[a-z][\w'’-]*\s+){0,2}$",
    re.I,
)


def equated(text: str, noun: str, asked: set[str]) -> str:
    """What ``text`` equates ``noun`` with: the name it is given or the phrase set beside it
    (see _named), else the complement of the "be" that follows it ("my best memory was when
    we won the final": "we won the final"), at most EQUATED_WORDS words, to its clause's
    end; "" when none says what the question (its terms ``asked``) does not. Its modifiers
    are no answer: they are what the question says of it ("favourite")."""
    stems = set(analyze(noun))
    for found in re.finditer(r"[\w'’-]+", text):
        if not stems or set(analyze(found.group(0))) != stems:
            continue
        subject = _EQUATED_SUBJECT.search(text[: found.start()])
        if subject and set(analyze(subject.group(1))) - asked:
            return subject.group(1)
        rest = ("- " if found.group(0).endswith("-") else "") + text[found.end() :]
        named = _named(rest, asked)
        if named:
            return named
        complement = _COPULA_AFTER.match(rest)
        if complement:
            clause = re.split(r"\s[-–—]\s|,", complement.group(1))[0]
            words = _trim_end(clause.split()[:EQUATED_WORDS])
            if words and set(analyze(" ".join(words))) - asked:
                return " ".join(words)
    return ""


# "… but contemporary is my top pick": a clause that equates its subject with something of
# the speaker's answers "what is X's N?" in the speaker's words ("top pick" for
# "favourite style"), the subject being what the question asks for.
_OWNED_SUBJECT = re.compile(
    r"(?:^|[,;:]\s*|\s[-–—]\s*|\b(?=but|and|so))(?:(?:but|and|so)\s+)?"
    r"((?:the\s+)?[\w'’-]+(?:\s+[\w'’-]+){0,2}?)\s+(?:is|was|'s|’s)\s+(?:my|our)\s+"
    r"(?:[\w'’-]+\s*){1,3}(?:[.;!?,]|$)",
    re.I,
)


def owned_subject(text: str, asked: set[str]) -> str:
    """The subject ``text`` equates with something of the speaker's ("contemporary is my
    top pick": "contemporary"), asked "what is X's N?" where the sentence says N in other
    words; a pronoun is no answer, nor words the question (its terms ``asked``) says. ""
    if none."""
    for found in _OWNED_SUBJECT.finditer(text):
        subject = found.group(1)
        first = subject.split()[0].lower()
        if (first in STOP and first != "the") or not set(analyze(subject)) - asked:
            continue
        return subject
    return ""


# "What was the biggest challenge …?" asks for the one thing a superlative picks out; a
# sentence picks it out with a superlative of its own, equated with it by "be" ("… but the
# worst was self-doubt"), whatever the adjective. Words in -est that are no adjective's
# superlative ("interest", "honest", "rest") are set apart.
_NOT_SUPERLATIVE = (
    r"(?!(?:inter|for|hon|requ|gu|ch|qu|sugg|prot|harv|cont|conqu|inv|manif|dig|ar|b|n|p|r|t|v|w|z|"
    r"te|ze|ve|we|ne|pe|re)est\b)"
)
_SUPERLATIVE = (
    rf"(?:{_NOT_SUPERLATIVE}[a-z]{{2,}}est|best|worst|most\s+[a-z][\w'’-]*|least\s+[a-z][\w'’-]*)"
)
_ASKS_SUPERLATIVE = re.compile(rf"^\s*[Ww]hat\s+(?:is|was|are|were)\b.*\b{_SUPERLATIVE}\b")
_SAYS_SUPERLATIVE = re.compile(
    rf"\b(?:[Tt]he|[Mm]y|[Oo]ur)\s+{_SUPERLATIVE}(?:\s+[a-z][\w'’-]*)?\s+(?:is|was|were|are)\s+"
    r"([^.;!?,]{2,})"
)


def superlative(question: str, text: str, asked: set[str]) -> str:
    """What ``text`` equates a superlative with ("the worst was self-doubt": "self-doubt"),
    asked what a superlative picks out; "" when the question or ``text`` has no such
    shape, or the phrase says nothing the question (its terms ``asked``) does not."""
    if not _ASKS_SUPERLATIVE.match(question):
        return ""
    for found in _SAYS_SUPERLATIVE.finditer(text):
        words = _trim_end(found.group(1).split()[:EQUATED_WORDS])
        if words and set(analyze(" ".join(words))) - asked:
            return " ".join(words)
    return ""


# "a safe, inviting place for people to grow": a short phrase of a preposition after the
# noun, closing its clause, says which one it is, as its modifiers do.
_NOUN_COMPLEMENT = re.compile(
    r"\s+((?:for|of|with|from|about)\s+[\w'’-]+(?:\s+[\w'’-]+){0,4}?)\s*(?:[.!?;,]|$)"
)


def with_complement(text: str, phrase: str) -> str:
    """``phrase`` (a noun phrase cut from ``text``) with the short prepositional phrase
    that follows it to its clause's end, when there is one (see _NOUN_COMPLEMENT)."""
    at = text.find(phrase)
    if not phrase or at < 0:
        return phrase
    found = _NOUN_COMPLEMENT.match(text, at + len(phrase))
    if not found or _SUBJECT_WORDS & {w.lower() for w in found.group(1).split()}:
        return phrase
    return f"{phrase} {found.group(1)}"


def noun_phrase(text: str, noun: str, asked: set[str]) -> str:
    """The noun phrase of ``text`` that ends in ``noun`` (by stem) and says, in the words
    before it, what the question (its terms ``asked``) does not: asked what kind of
    flooring, "I'm after Marley flooring" answers "Marley flooring". The name the noun is
    given right after it, or the phrase set beside it after a dash or colon, says which
    one it is better still (see _named). "" if none does."""
    stems = set(analyze(noun))
    found = list(re.finditer(r"[\w'’-]+|[^\w\s]", text))
    tokens = [m.group(0) for m in found]
    for n, token in enumerate(tokens):
        if not stems or set(analyze(token)) != stems:
            continue
        # "books- classics": a dash written against the noun still sets a phrase beside it.
        rest = ("- " if token.endswith("-") else "") + text[found[n].end() :]
        named = _named(rest, asked)
        if named:
            return named
        words: list[str] = []
        at = n
        while at > 0 and len(words) < 3:
            before, low = tokens[at - 1], tokens[at - 1].lower()
            if (
                low in ("and", "or", ",")
                and words
                and at > 1
                and re.match(r"[\w'’-]+$", tokens[at - 2])
                and tokens[at - 2].lower() not in STOP | _PHRASE_EDGE
            ):
                # Modifiers coordinated ("red and purple lighting", "a safe, inviting
                # place"): both are the kind.
                words[:0] = [tokens[at - 2], before]
                at -= 2
                continue
            if not re.match(r"[\w'’-]+$", before) or low in STOP | _PHRASE_EDGE:
                break
            if TIME_WORD.match(low) or _SUBJECT.match(low):
                break  # "weekend yoga" says when, "I'm" whose: neither is the kind
            words.insert(0, before)
            at -= 1
        if words and _after_subject(tokens[:at]):
            # "I'm trying kundalini yoga", "I also enjoy aerial yoga": the word after the
            # subject is its verb, not a word of the noun's phrase.
            words = words[1:]
        if any(set(analyze(w)) - asked for w in words):
            return joined([*words, token])
    return ""


# A subject pronoun, alone or with the verb it is contracted with ("I'm", "we've").
_SUBJECT = re.compile(r"^(?:i|we|you|he|she|they)(?:['’](?:m|re|ve|s|d|ll))?$", re.I)
# Words that may stand between a subject and its verb ("I also enjoy", "we really love").
_BETWEEN_SUBJECT_AND_VERB = frozenset(
    "also really just still always often never usually sometimes even too now do did".split()
)


def _after_subject(before: list[str]) -> bool:
    """Whether the tokens ``before`` a word end in a subject pronoun (with adverbs after
    it): that word is then the subject's verb."""
    at = len(before) - 1
    while at >= 0 and (
        before[at].lower() in _BETWEEN_SUBJECT_AND_VERB or before[at].lower().endswith("ly")
    ):
        at -= 1
    return at >= 0 and bool(_SUBJECT.match(before[at]))


# What names a noun right after it: a title in quotes or a capitalised name, bare or after
# a verb of naming ("a piece called "Finding Freedom"", "this game Catan"); or a phrase set
# beside it after a dash or colon ("a new project - a thriller set in a small town"), which
# reads as a noun phrase, no clause of its own ("my bike - it was cheap", see _nominal).
_NAME_AFTER = re.compile(
    r"^,?\s*(?:(?:called|named|titled)\s+)?"
    r"(?:\"([^\"]{2,60})\"|“([^”]{2,60})”|([A-Z][\w'’-]*(?:\s+(?:[A-Z][\w'’-]*|of|the|and))*))"
)
_APPOSITION_AFTER = re.compile(r"^\s*(?:[-–—]+|:)\s*([^.;!?\-–—:()\[\]]{3,})")
APPOSITION_WORDS = 12


# What an apposition opens with: a determiner, a number word, or the "to" of an infinitive.
_NOMINAL_OPENERS = frozenset(
    "a an the this that these those my your his her its our their some any each every no "
    "one two three few several many to".split()
)


def _nominal(words: list[str]) -> bool:
    """Whether ``words`` set beside a noun read as a noun phrase, as an apposition is: one
    opening with a determiner or a number ("a thriller set in …"), an infinitive ("a good
    cause - to help …"), a list ("classics, stories …"), or a few words ("pizza"); not a
    clause ("check out this pic …")."""
    first = words[0].lower()
    return (
        first in _NOMINAL_OPENERS
        or first.isdigit()
        or any(w.endswith(",") for w in words[:3])
        or len(words) <= 3
    )


def _named(rest: str, asked: set[str]) -> str:
    """What names the noun that ``rest`` follows (see _NAME_AFTER), or the phrase set
    beside it (at most APPOSITION_WORDS words); "" when neither says what the question (its
    terms ``asked``) does not."""
    found = _NAME_AFTER.match(rest)
    if found:
        name = next(g for g in found.groups() if g).strip(" .,;:!?")
        words = name.split()
        while words and words[-1].lower() in ("of", "the", "and"):
            words.pop()
        name = " ".join(words)
        low = name.lower()
        if (
            words
            and low not in _SUBJECT_WORDS
            and words[0].lower() not in CALENDAR | STOP
            and set(analyze(name)) - asked
        ):
            return name
    found = _APPOSITION_AFTER.match(rest)
    if found:
        words = found.group(1).split()[:APPOSITION_WORDS]
        first = re.split(r"['’]", words[0].lower().strip(","))[0]
        if first in _SUBJECT_WORDS | _CLAUSE_WORDS | _WH_WORDS or not _nominal(words):
            return ""
        words = _trim_end([w.strip(",") for w in words] if len(words) == 1 else words)
        phrase = " ".join(words).rstrip(",")
        if phrase and set(analyze(phrase)) - asked:
            return phrase
    return ""


# "Why …?" is answered by the clause a causal connective opens ("… 'cause I'm passionate
# about dancing"), by the subject of a verb of causing ("Losing my job gave me the push"), by
# the clause before a consequence ("I love both, so combining them …": what follows "so" is
# what was asked about, so it must say one of the question's words), or by the purpose a
# verb of wanting gives ("I wanted to feel closer to a community").
# "Since" opens a reason when its clause says what holds now ("since I'm lactose
# intolerant"); with a time or a past event ("since 2019", "since I moved") it says when.
_SINCE_CAUSE = (
    r"\bsince(?=\s+(?:I|we|you|he|she|they|it)(?:['’](?:m|re)\b|\s+(?:am|are|is|can|do|does"
    r"|don['’]t|doesn['’]t)\b))"
)
_BECAUSE = re.compile(
    rf"(?:\bbecause|'cause|’cause|\bso that|{_SINCE_CAUSE})\s+([^.;!?]{{3,}})", re.I
)
_CAUSER = re.compile(
    r"^([^.;!?]{3,60}?)\s+(?:gave|made|got|inspired|pushed|motivated|led)\s+(?:me|us)\b", re.I
)
_SO = re.compile(r"([^.;!?]{8,}?),?\s+so\s+(?!that\b|much\b|many\b|far\b)([^.;!?]{3,})", re.I)
_PURPOSE = re.compile(
    r"\b(?:wanted|want|wants|needed|need|needs|hoped|hope|hoping)\s+(to\s+[^.;!?,]{3,})", re.I
)


REASON_WORDS = 10  # a reason is a clause, longer than a thing's phrase


_NOMINATIVE = frozenset("i we he she they".split())


def _subject_word(word: str) -> bool:
    """Whether ``word`` is a pronoun only ever a subject, alone or with its verb ("I'm",
    "we're"; not "it" or "you", which are objects too)."""
    return re.split(r"['’]", word.lower())[0] in _NOMINATIVE


def _reason(text: str) -> str:
    """The reason a causal connective or a verb of causing in ``text`` gives."""
    found = _BECAUSE.search(text)
    if found:
        words = found.group(1).split()[:PHRASE_WORDS]
        # A reason put first ends where the main clause's subject starts ("since I'm
        # tired I'm staying in": "I'm tired").
        end = next(
            (n for n, w in enumerate(words) if n >= 2 and _subject_word(w)),
            len(words),
        )
        return " ".join(_trim_end(words[:end]))
    found = _CAUSER.match(text)
    return " ".join(found.group(1).split()[-PHRASE_WORDS:]) if found else ""


def _implied_reason(text: str, asked: set[str]) -> str:
    """The reason ``text`` implies for what the question (its terms ``asked``) asks "why"
    of: the clause before "so" when the one after says what was asked, else a purpose."""
    found = _SO.search(text)
    if found and set(analyze(found.group(2))) & asked:
        # The clause itself, after what leads into it ("Besides that, my cousin …").
        clause = found.group(1).rsplit(",", 1)
        cause = clause[-1] if len(clause[-1].split()) >= 3 else found.group(1)
        return " ".join(_trim_end(cause.split()[-REASON_WORDS:]))
    found = _PURPOSE.search(text)
    if not found:
        return ""
    return " ".join(_trim_end(found.group(1).split()[:REASON_WORDS]))


def _trim_end(words: list[str]) -> list[str]:
    """``words`` without the function words at their end (a clause keeps its subject, and
    a purpose its "to")."""
    while words and words[-1].lower() in STOP | PREPOSITIONS:
        words = words[:-1]
    return words


# A question that ends in a preposition ("What did the race raise awareness for?") asks for
# its object: in a sentence that says the word before it and then the preposition, the
# words after that preposition, to the clause's end.
_STRANDED = re.compile(r"([\w'’-]+)\s+([a-z]+)\s*\?*\s*$", re.I)
_STRANDED_PREPOSITION = re.compile(r"\b(?:" + "|".join(sorted(PREPOSITIONS)) + r")\s*\?*\s*$", re.I)
_CLAUSE_WORDS = frozenset(
    "is are was were be been and but so because which that who when while where if as "
    "since than then".split()
)
OBJECT_WORDS = 6
# Words after which a noun phrase has ended: an adverb of company ("dinner together") or a
# determiner that opens another phrase ("a poetry class this spring").
_PHRASE_ENDS = frozenset("together alone this that these those".split())


def stranded_object(question: str, text: str, asked: set[str]) -> str:
    """The object of the preposition ``question`` ends in, as ``text`` says it after the
    question's word before that preposition (``asked``: the question's terms, none of which
    the object may be made of); "" when the question ends otherwise or ``text`` does not."""
    found = _STRANDED.search(question.strip())
    if not found or found.group(2).lower() not in PREPOSITIONS:
        return ""
    word, prep = set(analyze(found.group(1))), found.group(2).lower()
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        if not word or not set(analyze(token)) & word:
            continue
        after = [t.lower() for t in tokens[n + 1 : n + 4]]
        if prep not in after:
            continue
        phrase = _object_after(tokens, n + 2 + after.index(prep), asked, gerund=False)
        if phrase:
            return phrase
    return ""


_DASH_TOKEN = re.compile(r"^[-–—]+$")


def _last_conjunct(tokens: list[str], at: int) -> list[str]:
    """The "and" or "or" at token ``at`` with the one word it joins to the phrase before it,
    when that word ends the phrase ("pots and cups.", "mentoring and training to …"); [] when
    no conjunction stands there, or what follows it goes on ("and went home": a clause)."""
    if at + 1 >= len(tokens) or tokens[at].lower() not in ("and", "or"):
        return []
    word = tokens[at + 1]
    after = tokens[at + 2].lower() if at + 2 < len(tokens) else "."
    if (
        not re.match(r"[\w'’-]+$", word)
        or word.lower() in STOP | _PHRASE_EDGE | _SUBJECT_WORDS
        or TIME_WORD.match(word.lower())
    ):
        return []
    if re.match(r"[\w'’-]+$", after) and after not in PREPOSITIONS | _CLAUSE_WORDS:
        return []
    return tokens[at : at + 2]


def _object_after(tokens: list[str], at: int, asked: set[str], gerund: bool = True) -> str:
    """The phrase that starts at token ``at`` (after its function words), to the first
    preposition (a lone gerund keeps its own: "volunteering at a shelter"), time word or
    clause word, with the whole list it is an item of (spans.coordinated); "" when it says
    nothing the question (its terms ``asked``) does not."""
    # A dash right after the verb sets its object beside it ("news to share - I joined …").
    while at < len(tokens) and (
        tokens[at].lower() in _PHRASE_EDGE | STOP or _DASH_TOKEN.match(tokens[at])
    ):
        at += 1
    end = at
    while end < len(tokens) and end - at < OBJECT_WORDS:
        t, low = tokens[end], tokens[end].lower()
        if (
            not re.match(r"[\w'’-]+$", t)
            or _DASH_TOKEN.match(t)
            or low in _CLAUSE_WORDS | _PHRASE_ENDS
            or TIME_WORD.match(low)
        ):
            break
        lone_gerund = gerund and end == at + 1 and tokens[at].lower().endswith("ing")
        if low in PREPOSITIONS and not lone_gerund:
            break
        end += 1
    words = _trim_end(tokens[at:end])
    if not words or not set(analyze(" ".join(words))) - asked:
        return ""
    if len(words) == end - at:
        words += _last_conjunct(tokens, end)
    first, last = coordinated(tokens, at, at + len(words) - 1)
    return joined(tokens[first : last + 1])


# "What did X say about Y?", "What does X think of Y?": what is said of Y, which a sentence
# says by a linking verb after Y ("Creating a special experience is the key to …").
_SAY_ABOUT = re.compile(
    r"^\s*[Ww]hat\s+(?:does|did|do)\s+[A-Z][\w'’-]*\s+(?:say|think|believe|feel)"
    r"(?:\s+to\s+[A-Z][\w'’-]*)?\s+(?:about|of|regarding|on)\s+(.+?)\s*\?*\s*$"
)
_LINK = re.compile(
    r"\s(?:is|was|are|were|['’]s|sounds?(?:\s+like)?|seems?|looks?|feels?)\s+"
    r"(?:(?:so|really|very|such|just|truly|totally|definitely)\s+)*",
    re.I,
)
SAID_WORDS = 12


def said_about(question: str, text: str) -> str:
    """What ``text`` says of the topic a "what did X say about Y?" question names: the
    complement of the first linking verb after a word of Y, to its clause's end (at most
    SAID_WORDS words); "" when the question has another shape or ``text`` links none."""
    found = _SAY_ABOUT.match(question)
    if not found:
        return ""
    topic = stem_set(found.group(1)) - STOP
    for link in _LINK.finditer(text):
        if not stem_set(text[: link.start()]) & topic:
            continue
        clause = re.split(r"[.;!?]|\s[-–—]\s", text[link.end() :])[0]
        words = _trim_end(clause.split()[:SAID_WORDS])
        if words:
            return " ".join(words)
    return ""


# "What natural disaster affected the town?", "What inspired Ilse to …?": "what", with its
# noun, is the subject of the verb right after it (in its past form), and a sentence in the
# passive names that subject after "by" ("the town was hit by a flood").
_ASKS_SUBJECT = re.compile(r"^\s*[Ww]hat(?:\s+[a-z][\w'’-]*){0,2}?\s+[a-z][\w'’-]*ed\s+(?!by\b)")
_BY_AGENT = re.compile(
    r"\b(?:is|are|was|were|been|being|got|gets|get)\s+(?:[a-z]+ly\s+)?"
    r"[a-z][\w'’-]*(?:ed|en|t)\s+by\s+",
    re.I,
)


def passive_agent(question: str, text: str, asked: set[str]) -> str:
    """What a question that asks for its verb's subject ("What flood affected …?") asks,
    as ``text`` says it in the passive: the phrase after its "by" (see _object_after); ""
    when the question has another shape or ``text`` no such phrase."""
    if not _ASKS_SUBJECT.match(question):
        return ""
    for found in _BY_AGENT.finditer(text):
        tokens = re.findall(r"[\w'’-]+|[^\w\s]", text[found.end() :])
        phrase = _object_after(tokens, 0, asked)
        if phrase:
            return phrase
    return ""


# "What did Gina receive from a dance contest?": where a sentence says the question's
# phrase of a preposition ("from a dance contest") after a noun phrase, that noun phrase
# stands where the question's "what" does ("one of my trophies from a dance contest").
_ASKED_PHRASE = re.compile(
    r"\b(" + "|".join(sorted(PREPOSITIONS - {"of", "than", "like"})) + r")\s+"
    r"((?:[\w'’-]+\s+){0,3}?[\w'’-]+)\s*(?=[?,]|\s+(?:"
    + "|".join(sorted(PREPOSITIONS))
    + r")\b|$)",
    re.I,
)
HEAD_WORDS = 3


def head_before(question: str, text: str, asked: set[str]) -> str:
    """The noun phrase ``text`` says right before the question's own phrase of a
    preposition (the same preposition, then a content word of the question's phrase):
    what that phrase qualifies, as the question's "what" does. At most HEAD_WORDS words,
    after the determiners and function words before it, none a verb's -ed or -ing form,
    and saying something the question (its terms ``asked``) does not; "" if none."""
    if not re.match(r"\s*(?:what|which)\b", question, re.I) or _STRANDED_PREPOSITION.search(
        question
    ):
        return ""  # one ending in a preposition asks for its object (stranded_object)
    phrases = []
    for found in _ASKED_PHRASE.finditer(question):
        stems = stem_set(found.group(2)) - STOP
        if stems:
            phrases.append((found.group(1).lower(), stems))
    if not phrases:
        return ""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        low = token.lower()
        for prep, stems in phrases:
            if low != prep or not stem_set(" ".join(tokens[n + 1 : n + 5])) & stems:
                continue
            words: list[str] = []
            for before in reversed(tokens[max(0, n - HEAD_WORDS) : n]):
                b = before.lower()
                if (
                    not re.match(r"[\w'’-]+$", before)
                    or b in STOP | _PHRASE_EDGE | PREPOSITIONS
                    or TIME_WORD.match(b)
                ):
                    break
                words.insert(0, before)
            if (
                words
                and not words[-1].lower().endswith(("ed", "ing"))
                and stem_set(" ".join(words)) - asked
            ):
                return " ".join(words)
    return ""


# "What did Caroline research?", "What did Mel and her kids make during …?": the verb after
# the auxiliary and a named subject (with whom they did it, or what of theirs: "Ilse's ring"),
# when the question says no object of it (it ends, or a preposition, a particle, an adverb or
# a time follows). An adverb may stand before the verb ("did X just finish"), and so may a
# verb of aspect that takes it as its complement ("has X started learning", "did X try to
# bake"); after a form of "be" the verb is its -ing form ("is X trying out").
_VERB_ENDS = PREPOSITIONS | frozenset(
    "after before during since until through across along among between against without "
    "within upon together last this that when while yesterday today "
    "out up off back down away".split()
)
_ADVERBS = "just|recently|also|really|usually|often|ever|still|first|finally|now|currently"
_PRE_VERB = rf"(?:\s+(?:{_ADVERBS}|[a-z]+ly))?"
_ASPECT = (
    r"(?:\s+(?:start|starts|started|begin|began|begun|keep|keeps|kept|try|tries|tried)"
    r"(?:\s+to)?)?"
)
_ASKED_VERB = re.compile(
    r"^\s*[Ww]hat(?:\s+[a-z][\w'’-]*){0,2}\s+"
    r"(did|does|do|has|have|had|will|would|can|is|are|was|were)\s+"
    r"[A-Z][\w-]*(?:['’]s(?:\s+[a-z][\w'’-]*){1,2}?)?"
    r"(?:\s+(?:and|&)\s+(?:(?:his|her|their)\s+[a-z][\w'’-]*|[A-Z][\w-]*))?"
    + _PRE_VERB
    + _ASPECT
    + rf"\s+(?!(?:{_ADVERBS})\b)([a-z][\w'’-]*)(?=\s*\?|\s+(?:"
    + "|".join(sorted(_VERB_ENDS))
    + r"|[a-z]+ly)\b)"
)
_BE = frozenset("is are was were".split())


def _asked_verb(question: str) -> set[str]:
    """The stems of the verb a "what did X do?" question asks about; empty when the
    question is of another shape."""
    found = _ASKED_VERB.match(question)
    if not found:
        return set()
    verb = found.group(2).lower()
    if verb in FUNCTION_WORDS | PREPOSITIONS | _CLAUSE_WORDS:
        return set()
    if found.group(1).lower() in _BE and not verb.endswith("ing"):
        return set()  # "What is X excited about?": a state, no verb done
    return set(analyze(verb))


def verb_object(question: str, text: str, asked: set[str]) -> str:
    """What a "what did X do?" question asks for: the object of its verb, as ``text``
    says it right after that verb (in any form: "made our own pots" for "make"; see
    _object_after); "" when the question is of another shape or ``text`` does not say the
    verb with an object of words the question does not have (``asked``)."""
    verb = _asked_verb(question)
    if not verb:
        return ""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        if _same_word(set(analyze(token)), verb):
            # A verb that takes its object through a preposition ("participated in a 5K
            # run") when the question names none.
            at = n + 2 if n + 1 < len(tokens) and tokens[n + 1].lower() in PREPOSITIONS else n + 1
            phrase = _object_after(tokens, at, asked)
            if phrase:
                return phrase
    return ""


# "What did Maria receive?" is answered by its converse, said of the giver: "they gave me a
# medal" says what the speaker received, as the object after the one it was given to.
_RECEIVED = frozenset(analyze("receive get win earn"))
_GIVEN = re.compile(
    r"\b(?:gave|give|gives|given|giving|awarded|handed|sent|presented|offered|bought|got)\s+"
    r"(?:me|us|him|her|them)\b",
    re.I,
)


def received(question: str, text: str, asked: set[str]) -> str:
    """What ``text`` says was given to its speaker (or the one it names), asked "what did X
    receive/get/win?" ("they gave me a medal": "a medal"); "" when the question has another
    verb or ``text`` says no giving."""
    if not _asked_verb(question) & _RECEIVED:
        return ""
    for given in _GIVEN.finditer(text):
        tokens = re.findall(r"[\w'’-]+|[^\w\s]", text[given.end() :])
        phrase = _object_after(tokens, 0, asked)
        if phrase:
            return phrase
    return ""


# "What did Melanie realize …?": a verb said with "that" and a clause ("I'm starting to
# realize that self-care is really important") takes the clause as its object, what was
# realised, learnt or decided.
# "that" opens a clause when a subject pronoun follows it, or a form of "be" or an
# auxiliary within its next three words ("that self-care is …"); "that book you
# recommended" is a determiner's noun phrase.
_THAT_CLAUSE = re.compile(
    r"\s+that\s+((?:(?:i|we|you|he|she|they|it)\b|(?:[\w'’-]+\s+){1,2}"
    r"(?:is|are|was|were|has|have|had|can|could|will|would|should|must|needs?)\b)[^.;!?]*)",
    re.I,
)
CLAUSE_WORDS = 12
THAT_SENTENCES = 5


def _said_by_asked(r: Ranking, s: Said) -> bool:
    """Whether ``s`` was said by a speaker the question names (any, when it names none)."""
    return not r.asked_speakers or bool(set(analyze(s.speaker)) & r.asked_speakers)


def that_clause(question: str, text: str) -> str:
    """The clause ``text`` says after the question's verb and "that" ("realize that
    self-care is important": "self-care is important"), to the sentence's end or a dash,
    at most CLAUSE_WORDS words; "" when the question asks no verb or ``text`` does not say
    it so."""
    verb = _asked_verb(question)
    if not verb:
        return ""
    for found in re.finditer(r"[\w'’-]+", text):
        if not _same_word(set(analyze(found.group(0))), verb):
            continue
        clause = _THAT_CLAUSE.match(text, found.end())
        if clause:
            words = _trim_end(re.split(r"\s[-–—]\s|,", clause.group(1))[0].split()[:CLAUSE_WORDS])
            if len(words) >= 2:
                return " ".join(words)
    return ""


# "What advice does X give?": advice is said in the imperative ("Do your research and find
# an agency"), a verb with no subject before it, its object next; the whole clause is it.
_ASKS_ADVICE = re.compile(r"^\s*[Ww]hat\s+(?:\w+\s+)?(?:advice|tips?|suggestions?)\b")
_IMPERATIVE = re.compile(
    r"^\s*(?:(?:just|always|never|don['’]t|do\s+not)\s+)?"
    r"(?!(?:i|we|you|he|she|they|it|this|that|there|the|a|an|my|our|yeah|yes|so|and|but)\b)"
    r"[a-z]+\s+(?:your|the|a|an|it|them|some|yourself|up|out|on)\b",
    re.I,
)
ADVICE_WORDS = 16


def advice(question: str, text: str) -> str:
    """The clause ``text`` gives as advice, asked "what advice does X give?": a sentence in
    the imperative, to its end (at most ADVICE_WORDS words); "" when the question asks
    something else or ``text`` is no imperative."""
    if not _ASKS_ADVICE.match(question) or not _IMPERATIVE.match(text):
        return ""
    words = re.split(r"[.;!?]", text)[0].split()
    return " ".join(words) if len(words) <= ADVICE_WORDS else ""


def _same_word(a: set[str], b: set[str]) -> bool:
    """Whether stems ``a`` and ``b`` are of one word: equal, or one a stem of four letters
    or more that the other starts with (the analyzer stems "participate" to "particip" and
    "participated" to "participat")."""
    if a == b:
        return True
    if len(a) != 1 or len(b) != 1:
        return False
    x, y = sorted((next(iter(a)), next(iter(b))), key=len)
    return len(x) >= 4 and y.startswith(x)


def done_object(question: str, text: str, asked: set[str]) -> str:
    """What a list question's verb was done to, as ``text`` says it ("What has X
    painted?"): the verb's object ("painted that lake sunrise"), or, where the verb is said
    as a noun (after a determiner: "a painting"), the thing it is of ("a painting of a
    sunset") or the word that qualifies it ("my horse painting"). A verb followed by a
    preposition ("painted on a wall", "painting like our last one") says where or how, no
    object; "" when no form of the verb has one."""
    verb = _asked_verb(question)
    if not verb:
        return ""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        if set(analyze(token)) != verb or token.endswith(("'s", "’s")):
            continue
        if _participle_of_noun(tokens, n):
            continue  # "a man playing a piano": the man plays, not whom the question asks
        following = tokens[n + 1].lower() if n + 1 < len(tokens) else ""
        if (
            n >= 2
            and tokens[n - 1].lower() in _SUBJECT_WORDS
            and tokens[n - 2].lower() not in _COORDINATORS
        ):
            # "These figurines I bought yesterday": the thing before the clause's subject
            # is what the verb was done to, after its determiner ("My mom and I made":
            # before a coordinator, it is the subject's other half).
            start = n - 2
            while (
                start > 0 and n - 2 - start < 2 and re.match(r"[a-z][\w'’-]*$", tokens[start - 1])
            ):
                if tokens[start - 1].lower() in _PHRASE_EDGE | STOP | PREPOSITIONS:
                    break
                start -= 1
            if start > 0 and tokens[start - 1].lower() in _PHRASE_EDGE - _COORDINATORS:
                words = tokens[start : n - 1]
                if set(analyze(" ".join(words))) - asked and re.match(r"[a-z]", words[0]):
                    return " ".join(words)
        edge = n - 1
        while edge >= 0 and re.match(r"[a-z][\w'’-]*$", tokens[edge]):
            if tokens[edge].lower() in _PHRASE_EDGE | STOP | PREPOSITIONS:
                break
            edge -= 1
        if edge >= 0 and tokens[edge].lower() in _PHRASE_EDGE - _COORDINATORS:
            # A noun: what it is of, else the words between its determiner and it.
            if following == "of":
                phrase = _object_after(tokens, n + 2, asked)
            else:
                words = tokens[edge + 1 : n]
                phrase = " ".join(words) if set(analyze(" ".join(words))) - asked else ""
        elif following in PREPOSITIONS:
            continue
        else:
            phrase = _object_after(tokens, n + 1, asked)
        # A thing is a noun phrase: words that hold a pronoun ("helps me express …") are a
        # clause, the verb's form its subject.
        if phrase and not _SUBJECT_WORDS & {w.lower() for w in re.findall(r"[\w'’-]+", phrase)}:
            return phrase
    return ""


_COORDINATORS = frozenset("and or but nor plus yet".split())


def grammar_object(question: str, text: str, asked: set[str]) -> str:
    """The object ``question``'s grammar asks for, as ``text`` says it: of the preposition
    it ends in, else of its verb."""
    if _STRANDED_PREPOSITION.search(question):
        return stranded_object(question, text, asked)
    return verb_object(question, text, asked)


def gerund(text: str, asked: set[str]) -> str:
    """The first verb's -ing form in ``text`` that the question (its terms ``asked``) does
    not say, with the word that qualifies it ("horseback riding"): what an activity is
    called ("hiking with my friends", "our camping trip"); "" if none."""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        low = token.lower()
        if (
            len(low) < 6
            or not low.endswith("ing")
            or low.endswith("thing")
            or low in STOP | FUNCTION_WORDS | _NOT_GERUNDS | _LIGHT_GERUNDS
            or set(analyze(token)) & asked
        ):
            continue
        before = tokens[n - 1] if n else ""
        if before.lower() in _DEGREE:
            continue  # "so refreshing", "how fleeting": an adjective, no activity
        qualified = (
            re.match(r"[a-z][\w'’-]*$", before)
            and before.lower() not in STOP | FUNCTION_WORDS | _PHRASE_EDGE | PREPOSITIONS
            and not before.lower().endswith(("ed", "ing", "ly"))
            and not TIME_WORD.match(before)
            # After a noun with its determiner ("a person holding", "had a blast
            # exploring") the -ing form says what that noun does: it is no qualifier.
            and not (n >= 2 and tokens[n - 2].lower() in _DETERMINERS)
        )
        return f"{before} {token}" if qualified else token
    return ""


def _participle_of_noun(tokens: list[str], at: int) -> bool:
    """Whether the -ing form at ``at`` follows a noun with its determiner and takes an
    object of its own ("a person holding a frisbee", "a man playing the piano"): it then
    says what that noun does. Without an object it may be a noun itself ("an abstract
    painting")."""
    if at < 2 or at + 1 >= len(tokens) or not tokens[at].lower().endswith("ing"):
        return False
    noun = tokens[at - 1].lower()
    return (
        tokens[at - 2].lower() in _DETERMINERS
        and tokens[at + 1].lower() in _DETERMINERS
        and bool(re.match(r"[a-z][\w'’-]*$", noun))
        and noun not in STOP | FUNCTION_WORDS | _PHRASE_EDGE | PREPOSITIONS
    )


# Words of degree: an -ing form after one is an adjective ("so relaxing").
_DEGREE = frozenset(
    "how so very too really quite pretty more most less least extremely incredibly super "
    "truly".split()
)
_DETERMINERS = frozenset(
    "a an the this that these those my your his her its our their some any each every "
    "another no one two three four five six".split()
)


# "How …?" asks for a manner or a state: the means a "by" phrase gives ("by reminding
# myself of my progress"), or what a linking verb says its subject is ("The studio looks
# amazing", "I felt tiny and in awe").
_MEANS = re.compile(r"\bby\s+([a-z]+ing\b[^.;!?]*)", re.I)
_LINKING = re.compile(
    r"(?:\b(?:is|are|was|were|am|looks?|looked|seems?|seemed|feels?|felt|became|becomes)"
    r"|['’](?:s|m|re))\s+(?:(?:so|really|very|super|pretty|quite|just|totally|all|such|still|always|also|even|now)\s+)*",
    re.I,
)


# "How do you unwind?" — "Dancing helps me unwind.": what helps, lets or keeps someone do
# the verb asked is the means, said as one ("by dancing") when it is an activity.
_ENABLER = re.compile(
    r"^(?:(?:and|but|so|plus|also)\s+)?([^.;:!?,]{3,40}?)\s+(?:helps?|helped|lets|let|allows?"
    r"|allowed|keeps?|kept)\s+(?:me|us|him|her|them)\s+(?:to\s+)?([\w'’-]+)",
    re.I,
)


def enabler(text: str, asked: set[str]) -> str:
    """The means ``text`` gives for doing a verb of the question (its terms ``asked``):
    the subject of "helps me <verb>", after "by" when it is an activity ("by dancing");
    "" if it says none."""
    found = _ENABLER.match(text.strip())
    if not found or not set(analyze(found.group(2).replace("-", ""))) & asked:
        return ""
    subject = found.group(1)
    if _SUBJECT.match(subject) or subject.split()[0].lower().split("'")[0] in POINTERS:
        return ""  # "It helps me relax": what helps is said before
    first = subject.split()[0]
    return f"by {subject[0].lower()}{subject[1:]}" if first.lower().endswith("ing") else subject


def manner(text: str, asked: set[str]) -> str:
    """What a "how" question asks of ``text``: the means its "by" phrase gives, else the
    complement of its first linking verb that says something the question (its terms
    ``asked``) does not; "" if neither."""
    found = _MEANS.search(text)
    if found:
        # A means is a clause ("by reminding myself of my successes and progress"), as
        # long as a reason, to its first comma.
        words = _trim_end(found.group(1).split(",")[0].split()[:REASON_WORDS])
        if set(analyze(" ".join(words))) - asked:
            return "by " + " ".join(words)
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for link in _LINKING.finditer(text):
        at = len(re.findall(r"[\w'’-]+|[^\w\s]", text[: link.end()]))
        while at < len(tokens) and tokens[at].lower() in _PHRASE_EDGE:
            at += 1
        following = tokens[at + 1].lower() if at + 1 < len(tokens) else ""
        if (
            at < len(tokens)
            and tokens[at].lower().endswith("ing")
            and following in PREPOSITIONS | _PHRASE_EDGE | _SUBJECT_WORDS
        ):
            continue  # "I'm still searching for": what the subject does, not what it is
        # A state is often said in words a phrase of content skips ("so happy", "amazing").
        end = at
        while end < len(tokens) and end - at < OBJECT_WORDS:
            low = tokens[end].lower()
            if (
                not re.match(r"[\w'’-]+$", low)
                or low in _CLAUSE_WORDS | PREPOSITIONS | _SUBJECT_WORDS | _WH_WORDS
                or TIME_WORD.match(low)
            ):
                break
            end += 1
        words = tokens[at:end]
        while words and words[-1].lower() in _PHRASE_EDGE:
            words = words[:-1]
        if words and set(analyze(" ".join(words))) - asked:
            return " ".join(words)
    return ""


_SUBJECT_WORDS = frozenset("i we you he she they it me us him her them".split())
_WH_WORDS = frozenset("how what why who whom whose which".split())


# Words in -ing that are no verb's form.
_NOT_GERUNDS = frozenset("during morning evening bring spring string ceiling".split())
# English's light verbs and verbs of mind: their -ing forms name no activity by themselves
# ("getting", "making", "thinking"); what is done is named by what follows them.
_LIGHT_GERUNDS = frozenset(
    "getting taking making having doing going coming putting giving keeping trying starting "
    "being feeling thinking seeing wanting needing letting saying telling knowing hoping".split()
)


# A feeling is said by the complement of "feel" ("I felt free and light", "it makes me feel
# tiny", "dancing makes me so happy"): asked how someone feels or what something makes
# them, that complement answers, to where its clause ends.
_ASKS_FEELING = re.compile(
    r"\b(?:feel|feels|felt|feeling)\b(?!\s+(?:I|we|you|he|she|they|it|that)\b)"
    r"|\bmakes?\s+(?:him|her|them)\s*\??\s*$",
    re.I,
)
_FEELING_DEGREE = (
    r"(?:(?:so|really|very|super|pretty|quite|just|truly|totally|a\s+bit|kind\s+of)\s+)*"
)
_FELT = re.compile(
    rf"\b(?:(?:feel|feels|felt|feeling)|(?:make|makes|made|making)\s+(?:me|us|him|her|them)"
    rf"(?:\s+feel)?)\s+{_FEELING_DEGREE}([^.;:!?,()\[\]]+)",
    re.I,
)
_FEELING_ENDS = frozenset(
    "when while because since as if but so after before knowing seeing that about".split()
)
FEELING_WORDS = 8
_LEADS_ON = frozenset("and or the a an my our your his her their".split())


def felt(text: str) -> str:
    """The feeling ``text`` says its subject has: the complement of its first "feel" (or
    of "makes me"), without the degree words before it, to its clause's end; "" if none."""
    for found in _FELT.finditer(text):
        words = found.group(1).split()
        end = next(
            (n for n, w in enumerate(words) if n and w.lower() in _FEELING_ENDS),
            len(words),
        )
        words = words[: min(end, FEELING_WORDS)]
        # Feelings are said in words a phrase of content drops ("so happy"): only the
        # function words that lead on are trimmed.
        while words and words[-1].lower() in PREPOSITIONS | _LEADS_ON:
            words = words[:-1]
        # "I feel I should go": a clause of its own, no feeling.
        if words and not _SUBJECT.match(words[0]):
            return " ".join(words)
    return ""


def thing(r: Ranking) -> Extracted:
    """What a "what" question asks: the noun phrase of the kind asked (an activity: the
    verb's object, or a verb's -ing form), the reason asked "why", the object the
    question's grammar asks for in the best sentence (of the preposition it ends in, or of
    its verb), else the phrase that says most the question does not (from the sentence a
    pointing sentence leans on)."""
    question = untimed(r.question)
    if _ASKS_FEELING.search(question) and not re.match(r"\s*why\b", question, re.I):
        for _score, _share, s in r.ranked[:3]:
            feeling = felt(s.claim)
            if feeling:
                return feeling, [s]
        # Said without "feel", a feeling is what its subject is ("I'm so thankful").
        for _score, _share, s in r.ranked[:3]:
            feeling = manner(s.claim, r.weigher.terms | r.weigher.names)
            if feeling:
                return feeling, [s]
    # An event or advice is asked: a clause, no noun phrase.
    for _score, _share, s in r.ranked[:3]:
        clause = happened_to(question, s.claim) or advice(question, s.claim)
        if clause:
            return clause, [s]
    # The asked verb said with its clause is rare, and says what was realised or decided
    # more surely than the best sentence's words: looked for a little past the best three,
    # in what the person asked about said.
    for _score, _share, s in r.ranked[:THAT_SENTENCES]:
        clause = that_clause(question, s.claim) if _said_by_asked(r, s) else ""
        if clause:
            return clause, [s]
    noun = asked_noun(question)
    picture = _picture_shown(r, question, noun)
    if picture:
        return picture
    if noun:
        # "Been reading that book you recommended": which book, the listener named.
        recalled = _recalled(r, noun)
        if recalled:
            return recalled
        for _score, _share, s in r.ranked[:3]:
            phrase = with_complement(
                s.claim, noun_phrase(s.claim, noun, r.weigher.terms | r.weigher.names)
            )
            if phrase:
                # "My old area was hit by a flood": which area, its speaker names where
                # they say it again ("my old area, West County").
                named = named_elsewhere(r, s, phrase)
                if named:
                    return named
            if not phrase:
                # A sentence may give it as the object the question's grammar asks for
                # ("What kind of experience did she get accepted for?"), not by its noun.
                phrase = grammar_object(question, s.claim, r.weigher.terms | r.weigher.names)
            if phrase:
                return phrase, [s]
        kind = compound_kind(question)
        for _score, _share, s in r.ranked[:3] if kind else []:
            # "What career path …?": a sentence may say only the kind of path ("counseling
            # as a career", "counseling career options").
            asked = r.weigher.terms | r.weigher.names
            phrase = noun_phrase(s.claim, kind, asked) or taken_as(s.claim, kind, asked)
            if phrase:
                return phrase, [s]
        if noun.lower() == "activity" or _DONE_AS.match(question):
            best = r.best()
            asked = r.weigher.terms | r.weigher.names
            done = verb_object(question, best.claim, asked) or gerund(best.claim, asked)
            if done:
                return done, [best]
    else:
        # "What was X's favourite memory?": the noun the question equates the answer with;
        # the best sentence names it, or sets a phrase beside it ("my memory - the final").
        noun = equated_noun(question)
        best = r.best()
        asked = r.weigher.terms | r.weigher.names
        phrase = (equated(best.claim, noun, asked) if noun else "") or superlative(
            question, best.claim, asked
        )
        if not phrase and noun:
            phrase = owned_subject(best.claim, asked)
        if phrase:
            return phrase, [best]
    if re.match(r"\s*why\b", r.question, re.I):
        for _score, _share, s in r.ranked[:3]:
            reason = _reason(s.claim)
            if reason:
                return reason, [s]
        # A reason only implied is taken from the best sentence alone.
        best = r.best()
        reason = _implied_reason(best.claim, r.weigher.terms - r.weigher.names)
        if reason:
            return reason, [best]
    if re.match(r"\s*how\b", r.question, re.I):
        asked = r.weigher.terms | r.weigher.names
        for _score, _share, s in r.ranked[:3]:
            means = enabler(s.claim, asked)
            if means:
                return means, [s]
        best = r.best()
        found = manner(best.claim, asked)
        if found:
            return found, [best]
    # The object the question's grammar asks for, from the best sentence.
    best = r.best()
    asked = r.weigher.terms | r.weigher.names
    told = _told_next(r, best)
    if told:
        # "Last weekend I did something new.": what it was, the speaker says next.
        best = told
    phrase = (
        said_about(question, best.claim)
        or grammar_object(question, best.claim, asked)
        or passive_agent(question, best.claim, asked)
        or received(question, best.claim, asked)
    )
    if phrase:
        return phrase, [best]
    phrase = head_before(question, best.claim, asked)
    if phrase:
        return phrase, [best]
    for _score, _share, best in r.ranked[:3]:
        if points_back(best.claim) and best.before:
            # "It was magical": what was magical is named in the sentence before.
            phrase = r.novel(best.before)
        else:
            phrase = r.novel(best.claim)
        if phrase:
            return phrase, [best]
    return "", [r.best()]


# "What kind of pot did X make?" asks about the verb as "What pot did X make?" does.
_KIND_OF = re.compile(r"^(\s*[Ww]hat)\s+(?:kind|type|sort|form|style)s?\s+of\s+")


def _picture_shown(r: Ranking, question: str, noun: str) -> Extracted | None:
    """What a picture shared with one of the three best sentences shows, when it shows the
    thing asked (kbmem.research.shown); None otherwise."""
    plain = _KIND_OF.sub(r"\1 ", question)
    verb = _asked_verb(plain)
    asked = r.weigher.terms | r.weigher.names
    for _score, _share, s in r.ranked[:3]:
        # The speaker's own words that say which one ("I'm after Marley flooring", a title
        # in quotes, "I baked a lemon cake") answer, from here on, not a picture
        # ("thoughtful signs like this!" points at the picture instead, and so does "I
        # made it").
        words, _scene = split_caption(s.claim or s.text)
        if (
            noun
            and not points_at(words, noun)
            and (
                noun_phrase(words, noun, asked)
                or quoted_title(words, asked)
                or grammar_object(question, words, asked)
            )
        ):
            noun = ""
        picture = shown(question, s, noun, verb)
        if picture:
            return picture, [s]
        if verb and _names_object(verb_object(plain, words, asked)) and not pointed(words, verb):
            verb = set()
    return None


# Objects that say no which ("make something with clay").
_INDEFINITE = frozenset("something anything everything nothing stuff thing things".split())


def _names_object(phrase: str) -> bool:
    """Whether a verb's object ``phrase`` names a thing (not "something …")."""
    return bool(phrase) and phrase.split()[0].lower() not in _INDEFINITE


# "What happened to Melanie's son?" asks what befell the son: the clause that says it.
_HAPPENED_TO = re.compile(
    r"^\s*[Ww]hat\s+(?:has\s+|had\s+)?happened\s+to\s+(?:[\w'’-]+\s+){0,3}?([a-z][\w'’-]*)"
    r"\s*(?:\?|$|\s+(?:on|in|at|during|after|before|when|while)\b)"
)
# "How did the flood impact the homes?" asks the same of the homes: what became of them.
_AFFECTED = re.compile(
    r"^\s*[Hh]ow\s+(?:did|does|has|have|had)\s+.+?\s+(?:affect|impact|change|hurt|damage)\s+"
    r"(?:[\w'’-]+\s+){0,3}?([a-z][\w'’-]*)\s*(?:\?|$|\s+(?:in|on|at|of|during)\b)"
)
_CLAUSE_OPENERS = frozenset("when while because since after before that and but so".split())
_HOLDER = frozenset("my our his her their the a an this that".split())
EVENT_WORDS = 10


def happened_to(question: str, text: str) -> str:
    """What ``text`` says befell the noun a "what happened to N?" (or "how did X affect
    N?") question names: said of N as its subject ("when my son got into an accident"),
    the predicate ("got into an accident"); N said elsewhere in its clause ("I lost my job
    at the company", "so lots of homes were ruined"), the whole clause; to the clause's
    end, at most EVENT_WORDS words. "" when the question has another shape or ``text``
    does not say N."""
    found = _HAPPENED_TO.match(untimed(question)) or _AFFECTED.match(untimed(question))
    if not found:
        return ""
    stems = stem_set(found.group(1))
    for clause in _CLAUSE_CUT.split(text.split("[shares", 1)[0]):
        words = re.findall(r"[\w'’-]+", clause)
        at = next((n for n, w in enumerate(words) if stem_set(w) == stems), None)
        if at is None:
            continue
        # The clause starts after the last word that opens one before the noun.
        start = max((n + 1 for n in range(at) if words[n].lower() in _CLAUSE_OPENERS), default=0)
        if all(w.lower() in _HOLDER for w in words[start:at]) and at + 1 < len(words):
            taken = words[at + 1 :]  # the noun is the subject: what it did or underwent
        else:
            taken = words[start:]
        taken = _trim_end(taken[:EVENT_WORDS])
        if len(taken) >= 2:
            return " ".join(taken)
    return ""


# "What creative project do Ilse and her kids do together?": a noun that the question's
# main verb "do" takes as its object is a thing done, an activity, whatever its word; it is
# named as activities are (the verb's object, or a verb's -ing form).
_DONE_AS = re.compile(
    r"^\s*[Ww]hat(?:\s+[a-z][\w'’-]*){1,3}\s+(?:do|does|did)\s+(?:[\w'’-]+\s+){1,4}?do\b"
)


# A sentence that says what was done only as "something" ("I did something new that had
# an impact on me") announces it: the speaker's next sentence says what.
_ANNOUNCES = re.compile(r"\b(?:something|a\s+thing)\b(?!\s+(?:like|as)\b)", re.I)


def _told_next(r: Ranking, s: Said) -> Said | None:
    """The next sentence of ``s``'s turn, by its speaker, when ``s`` announces what it is
    about as "something" (_ANNOUNCES); else None."""
    if not _ANNOUNCES.search(s.claim or s.text):
        return None
    return next(
        (
            n
            for n in r.all
            if n.item is s.item
            and n.before == s.text
            and n.speaker == s.speaker
            and not n.text.endswith("?")
        ),
        None,
    )


EXTRACTORS: dict[str, Callable[[Ranking], Extracted]] = {
    "date": date,
    "duration": duration,
    "number": number,
    "count": count,
    "person": person,
    "names": names,
    "place": place,
    "yesno": yesno,
    "list": listed,
    "choice": choice,
    "thing": thing,
}
