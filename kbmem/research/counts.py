"""The answer to "how much", "how often" and "how many" (kbmem.research.extract):
``number``, a number said with what it counts (an amount of money when money is asked), or
a frequency; ``count``, a number said of
the things counted, else the occasions asked "how many times", else the distinct things
the best sentences name (kbmem.research.lists), counted; and how a count is written and
read (number words, ordinals, the noun "how many" asks about)."""

from __future__ import annotations

import datetime
import itertools
import re
from dataclasses import dataclass

from kbmem.dates import named_years, said_dates
from kbmem.index.tenant import analyze
from kbmem.research.extract import LIST_SHARE, Extracted
from kbmem.research.lists import list_items
from kbmem.research.ranking import Ranking
from kbmem.research.said import STOP
from kbmem.research.spans import CAPS, FREQUENCY, NUMBER, PREPOSITIONS, stem_set, unit_after
from kbmem.research.types import Said


def number(r: Ranking) -> Extracted:
    """A frequency asked "how often"; else the number the best sentences giving one say,
    with what it counts."""
    if re.search(r"\bhow\s+often\b", r.question, re.I):
        for s in r.near():
            found = FREQUENCY.search(s.claim)
            if found:
                return found.group(0), [s]
    best = r.top("number")[:3]
    saying = [
        (s, [(m, unit_after(s.claim[m.end() :])) for m in NUMBER.finditer(s.claim)]) for s in best
    ]
    if _ASKS_AMOUNT.search(r.question):
        # "How much is the budget?" asks an amount of money: "Three days, …, budget of
        # about 6,000 pounds" answers with the pounds, not the days, and a sentence that
        # names an amount answers before one that only says a number ("PostgreSQL 16 on
        # RDS" does not say what RDS costs; "RDS is maybe 380 dollars a month" does).
        money = [(s, [(m, u) for m, u in said if _is_money(s.claim, m, u)]) for s, said in saying]
        saying = [(s, said) for s, said in money if said] + saying
    for s, said in saying:
        if said:
            found, tail = _nearest_said(r, s.claim, said)
            return f"{found.group(0)} {tail}".strip(), [s]
    return "", [r.best()]


def _nearest_said(
    r: Ranking, text: str, said: list[tuple[re.Match[str], str]]
) -> tuple[re.Match[str], str]:
    """Of the numbers ``text`` says, the one said nearest the question's words: "the budget
    is 5,600 dollars, and RDS at about 380 dollars fits" answers the cost of RDS with 380.
    The first one when no word of the question is in ``text``."""
    hits = r.asked_at(text)
    if not hits:
        return said[0]
    return min(said, key=lambda pair: min(abs(pair[0].start() - h) for h in hits))


_ASKS_AMOUNT = re.compile(
    r"\b(?:how\s+much|budget|cost|costs|price|fee|fees|salary|spend|spent|paid|pay)\b", re.I
)
_MONEY_WORDS = frozenset(
    "pounds pound dollars dollar euros euro quid bucks pence cents kroner krona yen".split()
)


def _is_money(text: str, number: re.Match[str], unit: str) -> bool:
    """Whether the number ``number`` of ``text`` (``unit``: the words after it) is an
    amount of money: a currency sign before it or a currency's name after it."""
    before = text[max(0, number.start() - 1) : number.start()]
    return before in ("£", "$", "€") or bool(set(unit.lower().split()[:1]) & _MONEY_WORDS)


@dataclass(frozen=True)
class Count:
    """A count of the things or times asked: ``written``, the count as a person answers
    "how many" ("three", "3", "twice", "three times"); ``noun``, what it counts, named as
    the question or the speaker names it ("chess tournaments", "" when the count says it,
    as "twice" does); what was counted, ``days`` (the days of the occasions) or ``items``
    (the things named); and the sentences it was read from."""

    written: str
    noun: str = ""
    days: tuple[datetime.date, ...] = ()
    items: tuple[str, ...] = ()
    sources: tuple[Said, ...] = ()

    @property
    def line(self) -> str:
        """The count with what it counts and what was counted: "two letters: 1 June, 1
        July 2026", "two ridges: Storr, Quiraing", "three chess tournaments"."""
        head = f"{self.written} {self.noun}".strip()
        if self.days:
            return f"{head}: {_days_written(list(self.days))}"
        if self.items:
            return f"{head}: {', '.join(self.items)}"
        return head


def count(r: Ranking) -> Extracted:
    """How many of the things asked, the count alone ("three", "twice", "three times"):
    the question already names what it counts, so a person answers "how many turtles?"
    with "Three"; what was counted (the days, the things) is in the sentences cited under
    it. The count with what it counts is ``counted``."""
    found = counted(r)
    if found is None:
        return "", [r.best()]
    return found.written, list(found.sources)


def _said_count(written: str, unit: str, times: bool) -> tuple[str, str]:
    """A count said with the words after it (``unit``, ending in the counted noun), as
    ``Count`` holds it: asked how many times, the times are part of the count ("three
    times", as "twice" is); else the words after it are what it counts ("three", "young
    children")."""
    if times:
        return f"{written} {unit}".strip(), ""
    return written, unit


def counted(r: Ranking) -> Count | None:
    """How many of the things asked: a number said of them (the largest, when sentences
    say several: a part is shown or told more often than the whole, and a count only grows),
    plus one for each later day its speaker tells one more ("another tournament"); else,
    asked "how many times", the distinct days the asked person says the asked thing in their
    own words; else the distinct things the sentences that answer nearly as well
    as the best one name (the items of ``listed``), counted. A number said is kept as said;
    a count made here is written as prose writes one (``count_written``). None when nothing
    is counted."""
    noun = counted_noun(r.question)
    times = noun == stem_set("times")
    # (its value, the count as written, what it counts, the sentence)
    stated: list[tuple[int, str, str, Said]] = []
    for s in r.at_least(LIST_SHARE):
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
    if times:
        stated += _said_times(r)
    if stated:
        value, said, unit, s = max(stated, key=lambda v: v[0])
        later = _told_again_after(r, noun, s) if unit and noun else []
        if later:
            # A count said on one day grows by each later telling of one more ("another"),
            # its things named as the question names them.
            unit = " ".join([*unit.split()[:-1], counted_words(r.question)[-1]])
            written, what = _said_count(count_written(value + len(later)), unit, times)
            return Count(written, what, sources=(s, *later))
        written, what = _said_count(said, unit, times)
        return Count(written, what, sources=(s,))
    if times:
        days = _occasions(r)
        if days:
            return Count(
                times_written(len(days)), days=tuple(sorted(days)), sources=tuple(days.values())
            )
    if noun and not times:
        # No number said: each day the asked person tells of one of the things counted, in
        # their own words and as done, is one more of them (distinct tellings on distinct
        # days are distinct things; one told again is caught by its told time).
        told = _told_anew(_named_once(_occasions(r, noun)), noun)
        if told:
            return Count(
                count_written(len(told)),
                _noun_counted(len(told), r.question),
                days=tuple(sorted(told)),
                sources=tuple(told.values()),
            )
    if _PARTITIVE.search(r.question):
        # "How many of her scripts made it to the big screen?" counts the things of which
        # what is asked is told, each told on its own day, as done, as occasions are: the
        # things themselves are often not named by the noun asked ("a screenplay", "another
        # movie script" for "her writing"), and the list's phrases are no count of them.
        told = _named_once(_occasions(r))
        if told:
            return Count(
                count_written(len(told)), days=tuple(sorted(told)), sources=tuple(told.values())
            )
    items, sources = list_items(r, per_session=times)
    if not items:
        return None
    distinct = tuple(dict.fromkeys(items))
    # What was counted, named as the question names it ("two ridges: Storr, Quiraing").
    if times:
        return Count(times_written(len(items)), items=distinct, sources=tuple(sources))
    return Count(
        count_written(len(items)),
        _noun_counted(len(items), r.question),
        items=distinct,
        sources=tuple(sources),
    )


# "How many of her scripts …", "how many of the games …": a part of the things named after
# "of", not a noun right after "how many".
_PARTITIVE = re.compile(r"\bhow\s+many\s+of\b", re.I)


def _tells_one_more(text: str, noun: frozenset[str]) -> bool:
    """Whether ``text`` tells one more of ``noun``: "another" or "one more" before it, a
    word or two qualifying it between ("another chess tournament"), or "again" after it in
    its clause ("ran a marathon again"); "another great memory" is one more of something
    else."""
    for clause in re.split(r"[.,;!?]", text):
        words = [w.lower() for w in re.findall(r"[\w'’-]+", clause)]
        at = [n for n, w in enumerate(words) if stem_set(w) == noun]
        for n, w in enumerate(words):
            one_more = w == "another" or (w == "more" and n > 0 and words[n - 1] == "one")
            if one_more and any(n < a <= n + 3 for a in at):
                return True
            if w == "again" and any(a < n for a in at):
                return True
    return False


def _told_again_after(r: Ranking, noun: frozenset[str], counted: Said) -> list[Said]:
    """The sentences, told by ``counted``'s speaker on later days than it, one to a day,
    that tell one more of the counted ``noun`` ("won another tournament"): a count said on
    one day ("my second tournament") is the count of that day, and each later telling of
    one more adds one to it."""
    days = {counted.day}
    found: list[Said] = []
    for s in r.at_least(LIST_SHARE):
        if not (s.day and counted.day and s.day > counted.day) or s.day in days:
            continue
        if s.speaker == counted.speaker and _tells_one_more(s.claim, noun):
            days.add(s.day)
            found.append(s)
    return found


# "Once" and "twice" are counts of times in one word ("I've been there twice"), unlike "once
# or twice a year" and "once in a while", frequencies (a count in each stretch of time), or
# "once I'm home", a conjunction: "once" counts only where its clause ends after it or a
# time follows it.
_SAID_TIMES = re.compile(
    r"\btwice\b(?!\s+(?:a|an|per|every|each)\b)"
    r"|\bonce\b(?!\s+in\s+a\s+while\b)"
    r"(?=\s*(?:[.,;!?]|$|(?:this|last|so|before|already|in|since)\b))",
    re.I,
)


def _said_times(r: Ranking) -> list[tuple[int, str, str, Said]]:
    """Asked "how many times", the counts "once" and "twice" said by the sentences scoring
    LIST_SHARE of the best one, as ``count`` keeps a number said (value, as said, no
    noun: "twice" says its times)."""
    found: list[tuple[int, str, str, Said]] = []
    for s in r.at_least(LIST_SHARE):
        for m in _SAID_TIMES.finditer(s.claim):
            found.append((2 if m.group(0).lower() == "twice" else 1, m.group(0).lower(), "", s))
    return found


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


def _noun_counted(value: int, question: str) -> str:
    """The noun the question counts, for ``value`` of them ("ridges", "ridge" for one), ""
    when the question names none."""
    words = counted_words(question)
    if words and value == 1:
        words = [*words[:-1], _singular(words[-1])]
    return " ".join(words)


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


def _occasions(r: Ranking, thing: frozenset[str] = frozenset()) -> dict[datetime.date, Said]:
    """The days on which a sentence says, in its own words (a picture's caption shows,
    it does not tell of a time), the question's nouns (``thing``, the stem of the noun
    counted, when given; else the nouns after a determiner, else the most telling word)
    other than the names, within the time the question names; asked about a speaker, said
    by them of themselves. Each day is one occasion, unless the time gone by that its
    sentence tells of reaches the day of another: the same event told again."""
    about = r.weigher.terms - r.weigher.names - r.speakers - stem_set("times")
    if not about:
        return {}
    # The thing done is named by a noun (the word after a determiner: "gone to the beach"),
    # the doing by verbs said of many things.
    nouns = {t for head in _heads(r.question) for t in analyze(head)} & about
    # Sorted first: of words weighted alike the first in order wins, the same in every
    # process (a set's order changes with the hash seed, and the count with it).
    rarest = max(sorted(nouns or about), key=lambda t: r.weigher.weight[t])
    if thing:
        nouns, rarest = set(thing), min(thing)
    # Every noun the question names the occasion by is named by a sentence telling of it:
    # "taken his turtles on a walk" is not told by "I took Max for a walk".
    named = nouns or {rarest}
    years = named_years(r.question)
    days: dict[datetime.date, Said] = {}
    spans: list[tuple[datetime.date, datetime.date]] = []
    for _score, _share, s in r.ranked:
        own = s.claim.split("[shares", 1)[0]
        if not s.day or not named <= set(analyze(own)):
            continue
        # What may happen is not an occasion that happened ("a few will be rejected").
        if _only_expected(own, rarest):
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


def _heads(question: str) -> list[str]:
    """The head nouns of the question's noun phrases after a determiner: the last word of the
    phrase, before the word that ends it ("the big screen" → screen, "his turtles on a walk"
    → turtles, walk); the words before the head only qualify it ("big")."""
    words = re.findall(r"[\w'’-]+|[^\w\s]", question)
    heads: list[str] = []
    for n, w in enumerate(words):
        if w.lower() not in _DETERMINERS or n + 1 == len(words):
            continue
        phrase = [words[n + 1]]
        for after in words[n + 2 : n + 4]:
            if _ends_phrase(after):
                break
            phrase.append(after)
        heads.append(phrase[-1])
    return heads


_DETERMINERS = frozenset("the a an my our his her their its".split())


def _ends_phrase(word: str) -> bool:
    """Whether ``word`` ends a noun phrase rather than naming its head: punctuation, a word
    that joins or ends phrases (a pronoun, a preposition, a verb of being), a count ("twice")
    or an adverb ("recently")."""
    low = word.lower()
    return (
        not re.fullmatch(r"[\w'’-]+", word)
        or low in STOP | PREPOSITIONS
        or number_value(low) is not None
        or low.endswith("ly")
    )


# Words that put what follows them in their clause out of what happened: a modal ("will be
# rejected", "can find"), a condition ("if"), a plan ("going to", "gonna"), or a hope, wish
# or want ("hoping to get it on the big screen"): what the speaker wants to happen.
_EXPECTED = frozenset(
    "will would could might may can shall should if gonna wanna "
    "hope hopes hoped hoping hopefully wish wishes wished wishing want wants wanted wanting "
    "plan plans planned planning".split()
)


def _only_expected(text: str, term: str) -> bool:
    """Whether every clause of ``text`` that names ``term`` (a stem) names it after a word
    that makes it only expected or supposed ("I assume a few will be rejected", "if I can
    find any"), not told as done."""
    telling = False
    for clause in re.split(r"[.,;:!?()]|\s[-–—]\s", text):
        words = [w.lower() for w in re.findall(r"[\w'’]+", clause)]
        at = next((n for n, w in enumerate(words) if term in analyze(w)), -1)
        if at < 0:
            continue
        before = words[:at]
        going_to = any(a == "going" and b == "to" for a, b in itertools.pairwise(before))
        if not (set(before) & _EXPECTED or going_to):
            telling = True
    return not telling


def _named_once(told: dict[datetime.date, Said]) -> dict[datetime.date, Said]:
    """``told`` without the days whose sentence names only things (by name, not at the
    sentence's start) an earlier day's sentence named: "the Storr ridge" climbed on two days
    is one ridge."""
    seen: set[str] = set()
    kept: dict[datetime.date, Said] = {}
    for day in sorted(told):
        named = {m.group(1) for m in CAPS.finditer(told[day].claim) if m.start() > 0}
        if named and named <= seen:
            continue
        seen |= named
        kept[day] = told[day]
    return kept


# A thing the listener already knows is named after "the", "this" or "that" ("the
# screenplay I sent in"); a new one after "a", "another", a number or an ordinal ("a
# screenplay", "my first screenplay"). The nearest of these words before the noun decides.
_KNOWN = frozenset("the this that these those".split())
_INTRODUCING = frozenset("a an another one new other my our your his her their".split())


def _only_known(text: str, noun: frozenset[str]) -> bool:
    """Whether ``text`` names the counted ``noun`` only as a thing already known: every time
    after "the", "this" or "that" (a word or two qualifying it between), and nowhere tells of
    one more ("another one", "another screenplay")."""
    if _tells_one_more(text, noun) or re.search(r"\b(?:another|a\s+new)\s+one\b", text, re.I):
        return False
    words = re.findall(r"[\w'’-]+", text)
    named = [n for n, w in enumerate(words) if stem_set(w) == noun]
    return bool(named) and all(_determined_as_known(words[max(0, n - 3) : n]) for n in named)


def _determined_as_known(before: list[str]) -> bool:
    """Whether the words ``before`` a noun (the last few) determine it as known: the nearest
    determiner is "the", "this" or "that", with no number or ordinal after it ("the second
    screenplay" tells which one by its count) and no name ("the Storr ridge" tells which one
    by its name, which ``_named_once`` compares)."""
    for w in reversed(before):
        low = w.lower()
        if low in _KNOWN:
            return True
        if low in _INTRODUCING or number_value(low) is not None or w[:1].isupper():
            return False
    return False


def _told_anew(told: dict[datetime.date, Said], noun: frozenset[str]) -> dict[datetime.date, Said]:
    """``told`` without the days after the first whose sentence names the counted ``noun``
    only as one already known ("the screenplay I sent in", after "I finished my first
    screenplay"): a telling of the one the listener knows is not another one."""
    kept: dict[datetime.date, Said] = {}
    for day in sorted(told):
        if kept and _only_known(told[day].claim.split("[shares", 1)[0], noun):
            continue
        kept[day] = told[day]
    return kept


def _told_span(text: str, day: datetime.date) -> tuple[datetime.date, datetime.date]:
    """The days the event ``text`` tells of may lie in: the times gone by it places on the
    calendar, with the day it was told; that day alone when it places none."""
    past = [d for d in said_dates(text, day) if d.first and d.last and d.first <= day]
    if not past:
        return day, day
    return min(d.first for d in past if d.first), max(day, *(d.last for d in past if d.last))
