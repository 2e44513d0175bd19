"""The direct answer to a question: one short line of the kind the question asks for, taken
from what memory says (the briefing's evidence), never made up.

A question is typed from its wh-word and its answer-type cues (``question_kind``): a person
("who"), a place ("where", "which city"), a date ("when"), a duration ("how long"), a number
("how many", "how much"), a list ("what activities", "what has X done"), yes/no ("did", "is",
"would") or a thing ("what"). The evidence is read sentence by sentence with who said it and
on which day (the turn header); each sentence is weighed by the question's rare words it says
(who said it counts for a sentence in the first person), by whether it gives an answer of the
kind asked, and by whether it was said in a time the question names. A small extractor per
kind then takes the answer out of the best sentences: a date resolved against the day it was
said (kbmem.dates.said_dates), a name, a place, a duration, a count of distinct mentions
across sessions, a list gathered across sessions and deduplicated. A sentence that only
points back ("it was great", "theirs") is read with the nearest sentence before it that
names something. When no sentence covers the question well the line says the evidence is
weak; when none covers it at all the answer is "Memory does not say"."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date

from kbmem.dates import (
    MONTHS,
    WEEKDAYS,
    SaidDate,
    date_windows,
    date_words,
    said_dates,
    stamp_day,
    written_date,
)
from kbmem.index.tenant import analyze
from kbmem.research.offline import (
    CORRECTION_WEIGHT,
    replaced_in,
    stated_values,
    states_correction,
)
from kbmem.research.types import EvidenceItem
from kbmem.store.pages import TURN_HEADER, unescape_line
from kbmem.textutil import split_sentences

NOTHING = "Memory does not say."
WEAK = "(weak evidence)"
# A sentence must say this share of the question's weight to answer it at all, and this share
# to answer it firmly; below the second the line says the evidence is weak.
MIN_SHARE = 0.25
FIRM_SHARE = 0.5
TYPE_MISS = 0.4  # a sentence that gives no answer of the kind asked counts this much
OUT_OF_WINDOW = 0.5  # said outside the time the question names
LIST_SHARE = 0.6  # of the best sentence's score, for another sentence's item to join a list
MAX_ITEMS = 6
RANK_PRIOR = 0.2
SUPERSEDED = 0.3  # a sentence stating a value that a correction replaced
ECHO_FLOOR = 0.4  # a sentence saying nothing new counts this much of its coverage
NEWS = 3  # new words for a sentence to count fully
BEFORE_SHARE = 0.7  # of the question's terms the sentence before says, the share counted
BEFORE_POINTER = 0.8  # the same, for a sentence that only points back
PHRASE_WORDS = 6  # a "what" answer is a phrase, not a sentence
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did has have had "
    "can could would will should shall may might the a an of to in on at for with by from "
    "about and or any some there that this these those it its".split()
)
# Words that shape the answer's kind without saying what it is about.
SHAPE_WORDS = frozenset(
    "many much long often far old kind kinds type types sort sorts name names time times "
    "date day year month week likely place happen".split()
)
STOP = frozenset(
    "i me my mine we us our ours you your yours he him his she her hers they them their theirs "
    "it its this that these those a an the and or but so of to in on at for with by from as is "
    "are was were be been being am do does did done have has had having will would can could "
    "should shall may might must not no yes just really very so too also then than there here "
    "what which who whom whose when where why how all any some more most such only own same "
    "out up down over about into again once because while if thanks thank oh wow hey hi yeah "
    "great good nice awesome amazing cool glad happy love totally definitely sure well lot "
    "like get got go going went make made know think feel felt lol haha".split()
)
POINTERS = frozenset("it its that this those these they them theirs there one".split())
_CAPS = re.compile(r"\b([A-Z][a-zA-Z'’-]+(?:\s+(?:[A-Z][a-zA-Z'’-]+|of|de|la|van|von))*)")
_DURATION = re.compile(
    r"\b(?:(?:for|about|around|over|nearly|almost|only|just)\s+)?"
    r"(?:\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|fifteen|twenty|thirty|forty|fifty|a few|a couple of|several|half an?)\s+"
    r"(?:seconds?|minutes?|mins?|hours?|days?|nights?|weeks?|months?|years?|decades?)"
    r"(?:\s+(?:ago|now|long|old))?\b",
    re.I,
)
_SINCE = re.compile(r"\bsince\s+(?:[A-Z]\w+|\d{4}|(?:I|we|she|he|they)\s+\w+(?:\s+\w+)?)", re.I)
_NUMBER = re.compile(
    r"\b(?:\d+(?:[.,]\d+)?%?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|dozen|hundred|thousand|million|twice|once)\b",
    re.I,
)
_PLACE = re.compile(
    r"\b(?:in|at|to|near|around|visited|visit|visiting)\s+"
    r"((?:the\s+)?[A-Z][\w'’-]+(?:\s+(?:[A-Z][\w'’-]+|of|de|la))*)"
)
_PLACE_NOUN = re.compile(
    r"\b(?:in|at|to|on)\s+((?:the|a|my|our|their|his|her)\s+(?:[a-z]+\s+)?"
    r"(?:beach|mountains?|forest|park|lake|city|town|village|museum|school|office|church|"
    r"camp|campsite|river|island|coast|countryside|hospital|library|gym|studio|shelter|"
    r"center|centre|cafe|restaurant|home|house|farm|trail|country|abroad))\b",
    re.I,
)
_WHERE_CLAUSE = re.compile(r"\bthe\s+\w+\s+where\s+([^.;,!?]{3,60})", re.I)
_NEGATION = re.compile(r"\b(?:not|never|no|don't|doesn't|didn't|won't|wouldn't|can't|isn't)\b")
_YESNO = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will|should|might|may)\b",
    re.I,
)
# "What has X done / made / read …?" asks for everything X did: a list.
_DONE = re.compile(
    r"\bwhat\s+(?:has|have|did|does|do)\s+\w+(?:\s+\w+)?\s+(?:done|made|bought|read|"
    r"painted|visited|tried|seen|watched|played|learned|participated|attended)\b",
    re.I,
)
_AUX = frozenset("is are was were do does did has have had can could would will should".split())
_NOT_PLURAL = frozenset("is was has does this his its us yes always sometimes news".split())


def question_kind(question: str) -> str:
    """The kind of answer ``question`` asks for: person, place, date, duration, number,
    count, list, yesno or thing (from its wh-word and the words that shape what it asks)."""
    q = question.strip().lower()
    q = re.sub(r"^(?:and|so|but|ok(?:ay)?|also)\s*,?\s+", "", q)
    if re.match(r"(?:on|in|at|by|since|until)?\s*(?:what|which)\s+(?:date|day|year|month)\b", q):
        return "date"
    if re.search(r"\bhow\s+long\s+ago\b", q) or re.match(r"when\b", q):
        return "date"
    if re.match(r"what\b.*\b(?:date|day|year)\s*\??$", q):
        return "date"  # "What is the launch date?"
    if re.match(r"what\b.*\b(?:budget|cost|price|fee|salary|amount|age|score)\b", q):
        return "number"  # the answer to "what is the budget?" is an amount
    if re.search(r"\bhow\s+long\b", q):
        return "duration"
    if re.search(r"\bhow\s+many\b", q):
        return "count"
    if re.search(r"\bhow\s+(?:much|old|often|far)\b", q):
        return "number"
    if re.match(r"(?:with\s+)?(?:who|whom|whose)\b", q) or re.search(
        r"\b(?:what|which)\s+(?:person|people|friend|name)\b", q
    ):
        return "person"
    if re.match(r"(?:from\s+)?where\b", q) or re.search(
        r"\b(?:what|which)\s+(?:city|country|town|place|state|location|island|beach)\b", q
    ):
        return "place"
    if _YESNO.match(q):
        return "yesno"
    if _DONE.search(question) or _asks_plural(q):
        return "list"
    return "thing"


def _asks_plural(q: str) -> bool:
    """Whether "what"/"which" is followed by a plural noun ("what instruments", "which two
    books"): the question asks for several things."""
    found = re.search(r"\b(?:what|which)\s+(\w+)(?:\s+(\w+))?", q)
    if not found:
        return False
    for word in (w for w in found.groups() if w):
        if word in _AUX:
            return False
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            return word not in _NOT_PLURAL
    return False


@dataclass
class Said:
    """A sentence of memory: its text, who said it, on which day, where it stands (the
    evidence item and its turn's lines) and the sentence said just before it."""

    text: str
    speaker: str
    day: date | None
    item: EvidenceItem
    start: int
    end: int
    before: str = ""
    session: str = ""
    # What the sentence still claims: without what it says is replaced ("21 April, not 14
    # April as stated"); set when it is read for a question.
    claim: str = ""


@dataclass
class DirectAnswer:
    """The line, the sentences it was taken from (best first) and whether memory says it
    firmly."""

    line: str
    sources: list[Said]
    firm: bool
    kind: str


def read_sentences(evidence: list[EvidenceItem]) -> list[Said]:
    """Every sentence of the evidence's turns (or paragraphs), with speaker and day."""
    out: list[Said] = []
    for item in evidence:
        lines = (item.source_text or item.excerpt).split("\n")
        base = item.interval.start
        speaker, stamp, start = "", "", base
        body: list[str] = []
        units: list[tuple[str, str, int, int, list[str]]] = []
        for n, line in enumerate(lines):
            header = TURN_HEADER.match(line)
            if header:
                if body:
                    units.append((speaker, stamp, start, base + n - 1, body))
                speaker, stamp, start, body = header.group(2), header.group(3), base + n, []
            elif line.strip() and not line.startswith("#"):
                body.append(unescape_line(line))
        if body:
            units.append((speaker, stamp, start, base + len(lines) - 1, body))
        previous = ""
        for speaker, stamp, start, end, body in units:
            day = stamp_day(stamp)
            for text in split_sentences(" ".join(body), cut="prose"):
                text = text.strip()
                if not text:
                    continue
                out.append(Said(text, speaker, day, item, start, end, previous, item.session_id))
                previous = text
    return out


def _terms(text: str) -> set[str]:
    return set(analyze(text))


def _names(question: str) -> list[str]:
    """Capitalised names the question gives (its first word aside)."""
    words = question.split()
    rest = " ".join(words[1:]) if words else ""
    return [m.group(1).rstrip("'’s") for m in _CAPS.finditer(rest)]


class _Weigher:
    """The question's terms, each weighing by its rarity among the sentences read."""

    def __init__(self, question: str, sentences: list[Said]):
        asked = [
            w
            for w in re.findall(r"[\w'’-]+", re.sub(r"\btake\s+place\b", "", question, flags=re.I))
            if w.lower() not in QUESTION_WORDS and w.lower() not in SHAPE_WORDS
        ]
        dated = date_words(question)
        self.terms = set(analyze(" ".join(w for w in asked if w.lower() not in dated)))
        self.names = {t for n in _names(question) for t in analyze(n)}
        df: dict[str, int] = {}
        for s in sentences:
            for t in _terms(s.text) & self.terms:
                df[t] = df.get(t, 0) + 1
        total = max(1, len(sentences))
        self.weight = {t: math.log(1 + total / (1 + df.get(t, 0))) for t in self.terms}
        self.whole = sum(self.weight.values()) or 1.0

    def share(self, s: Said) -> float:
        """The question's weight ``s`` says; who said a first-person sentence counts as said
        (asked what Caroline did, her "I went" is about her), and a sentence that points back
        takes the terms of the sentence before it at half weight."""
        said = _terms(s.text)
        if re.search(r"\b(?:I|my|me|I'm|I've|we|our)\b", s.text):
            said |= _terms(s.speaker)
        covered = sum(self.weight[t] for t in said & self.terms)
        if s.before:
            # What a sentence answers is often asked or named just before it: "What did
            # you paint?" — "A sunset!". A sentence that only points back leans on it more.
            share = BEFORE_POINTER if points_back(s.text) else BEFORE_SHARE
            covered += share * sum(self.weight[t] for t in (_terms(s.before) - said) & self.terms)
        return covered / self.whole


def points_back(text: str) -> bool:
    """Whether a sentence leans on the one before for what it is about ("It was great!")."""
    words = re.findall(r"[a-z']+", text.lower())
    content = [w for w in words if w not in STOP]
    return bool(set(words) & POINTERS) and len(content) <= 3


def _gives(kind: str, s: Said) -> bool:
    text = s.claim or s.text
    if kind == "date":
        return bool(said_dates(text, s.day))
    if kind == "duration":
        return bool(_DURATION.search(text) or _SINCE.search(text))
    if kind in ("number", "count"):
        return bool(_NUMBER.search(text))
    if kind == "person":
        return bool(_people(text, set(), frozenset(s.speaker.split()[:1])))
    if kind == "place":
        return bool(_PLACE.search(text) or _PLACE_NOUN.search(text))
    return True


def _people(text: str, exclude: set[str], known: frozenset[str] = frozenset()) -> list[str]:
    """Capitalised names in ``text`` less ``exclude`` (the question's own names, as index
    terms). A word that is capitalised only because it opens a sentence counts when it is a
    ``known`` name (a speaker, or written capitalised inside a sentence elsewhere)."""
    out = []
    for m in _CAPS.finditer(text):
        name = m.group(1)
        if not re.match(r"[A-Z][a-z]", name):
            continue  # "QR", "FL": codes, not names
        at_start = m.start() == 0 or text[: m.start()].rstrip().endswith((".", "!", "?", ":"))
        if at_start and " " not in name and name not in known:
            continue
        if name.split()[0].lower() in STOP | _CALENDAR or set(analyze(name)) <= exclude:
            continue
        out.append(name)
    return out


_CALENDAR = frozenset(WEEKDAYS) | frozenset(MONTHS) | frozenset(m[:3] for m in MONTHS)


def known_names(sentences: list[Said]) -> frozenset[str]:
    """Speakers, and words written capitalised inside a sentence (not after its start)."""
    names = {s.speaker.split()[0] for s in sentences if s.speaker}
    for s in sentences:
        for m in re.finditer(r"(?<=[a-z,;] )([A-Z][a-z]+)\b", s.text):
            names.add(m.group(1))
    return frozenset(names)


_TIME_WORD = re.compile(
    r"^(?:yesterday|today|tonight|tomorrow|recently|lately|ago|last|next|week|weekend|month|"
    r"year|day|night|morning|evening|afternoon|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|fri|sat|sun|btw|im|ive|its|thats|lots?)$",
    re.I,
)


def _novel(token: str, terms: set[str], names: set[str]) -> bool:
    """Whether a token says something the question does not: a content word (no function
    word, time word or filler) outside the question's terms and the speakers' names."""
    low = token.lower().replace("’", "'")
    if not re.match(r"^[\w'-]+$", low) or low in STOP or _TIME_WORD.match(low.replace("'", "")):
        return False
    if len(low) < 3 and not low.isdigit():
        return False
    stems = set(analyze(token))
    return bool(stems) and not stems & (terms | names)


_QUOTED = re.compile(r'"([^"]{2,60})"|“([^”]{2,60})”')
# Words that frame what is said ("I'm hoping", "now", "shares an image") without saying it.
FRAMING = frozenset(
    "now since still even ever bit stuff thing things something anything everything way "
    "kinda sorta pretty quite gonna wanna let let's want wanted hope hoping shares image "
    "photo picture chat chatted talked spoke".split()
)


def novel_phrase(text: str, terms: set[str], names: set[str], words: int = 5) -> str:
    """The run of at most ``words`` words of ``text`` that says most that the question does
    not (its own words, the speakers' names, fillers and time words aside), nearest after the
    question's own words (the answer to "what is Jon reading?" follows "reading"); a title
    in quotes that the question does not give is taken whole. "" when it says nothing new."""
    for found in _QUOTED.finditer(text):
        title = found.group(1) or found.group(2)
        if not set(analyze(title)) <= terms | names:
            return title
    tokens = re.findall(r"[\w'’-]+|[.,;:!?()\[\]\"]", text)
    marks = [_novel(t, terms, names) and t.lower() not in FRAMING for t in tokens]
    hits = [n for n, t in enumerate(tokens) if set(analyze(t)) & terms]
    best: tuple[float, int, int] | None = None
    for a in range(len(tokens)):
        if not marks[a]:
            continue
        for b in range(a, min(len(tokens), a + words)):
            if tokens[b] in '.,;:!?()[]"':
                break
            if not marks[b]:
                continue
            novel = sum(marks[a : b + 1])
            after = [a - h for h in hits if h < a]
            before = [h - b for h in hits if h > b]
            distance = min(after) if after else (min(before) + 3 if before else 8)
            score = novel - 0.3 * (b + 1 - a - novel) - 0.15 * min(distance, 10)
            if best is None or score > best[0]:
                best = (score, a, b)
    if best is None:
        return ""
    return " ".join(tokens[best[1] : best[2] + 1])


def _phrase_after(text: str, terms: set[str], words: int = PHRASE_WORDS) -> str:
    """The words of ``text`` after its last word that says one of ``terms`` (the answer to
    "what did Caroline research?" follows "researching"), up to a clause's end; the words
    before it when nothing follows."""
    tokens = re.findall(r"[\w'’-]+|[.,;:!?()]", text)
    hits = [n for n, t in enumerate(tokens) if set(analyze(t)) & terms]
    if not hits:
        return _content_phrase(text, words)
    after: list[str] = []
    for t in tokens[hits[-1] + 1 :]:
        if t in ".,;:!?()" or (after and t.lower() in ("and", "but", "because", "so", "which")):
            break
        after.append(t)
    phrase = _trim(after)
    if len([w for w in phrase if w.lower() not in STOP]) == 0:
        before = [t for t in tokens[: hits[0]] if t not in ".,;:!?()"]
        phrase = _trim(before[-words:])
    return " ".join(phrase[:words])


def _trim(words: list[str]) -> list[str]:
    """``words`` without the function words at either end."""
    while words and words[0].lower() in STOP | _PREPOSITIONS:
        words = words[1:]
    while words and words[-1].lower() in STOP | _PREPOSITIONS:
        words = words[:-1]
    return words


_PREPOSITIONS = frozenset("to of for in on at with about into onto from by than like".split())


def _content_phrase(text: str, words: int) -> str:
    """The longest run of content words in ``text``, cut to ``words``."""
    tokens = re.findall(r"[\w'’-]+|[.,;:!?]", text)
    best: list[str] = []
    run: list[str] = []
    for t in [*tokens, "."]:
        if t in ".,;:!?" or t.lower() in STOP:
            if len(run) > len(best):
                best = run
            run = []
        else:
            run.append(t)
    return " ".join(best[:words])


def _stem_set(text: str) -> frozenset[str]:
    return frozenset(analyze(text))


class _Answerer:
    def __init__(self, question: str, sentences: list[Said]):
        self.question = question
        self.kind = question_kind(question)
        self.weigher = _Weigher(question, sentences)
        self.windows = date_windows(question)
        self.speakers = {t for s in sentences for t in analyze(s.speaker)}
        self.known = known_names(sentences)
        self.all = sentences
        ranked = []
        order: dict[int, int] = {}
        for s in sentences:
            order.setdefault(id(s.item), len(order))
        for n, s in enumerate(sentences):
            if s.text.endswith("?"):
                continue
            corrects = states_correction([s.text])
            s.claim = replaced_in(s.text)[0] if corrects else s.text
            share = self.weigher.share(s)
            if share < MIN_SHARE:
                continue
            score = share * (1.0 if _gives(self.kind, s) else TYPE_MISS)
            if self.kind in ("thing", "list"):
                # A sentence that only says the question back ("I went to a council
                # meeting for adoption.") introduces the answer; the next one gives it.
                score *= ECHO_FLOOR + (1 - ECHO_FLOOR) * min(1.0, self._news(s.claim) / NEWS)
            if corrects:
                score *= CORRECTION_WEIGHT  # what memory holds now, over what it replaced
            # The researcher's order of the evidence breaks near ties.
            score *= 1 + RANK_PRIOR / (1 + order[id(s.item)])
            if self.windows and s.day and not any(w.contains(s.day) for w in self.windows):
                score *= OUT_OF_WINDOW
            ranked.append((score, -n, share, s))
        replaced = {
            v for s in sentences if s.claim and s.claim != s.text for v in replaced_in(s.text)[1]
        }
        if replaced:
            # A value a correction replaced ("not 14 April as stated") is stale wherever
            # else it is said.
            ranked = [
                (score * SUPERSEDED if stated_values(s.claim) & replaced else score, n, sh, s)
                for score, n, sh, s in ranked
            ]
        ranked.sort(key=lambda r: (r[0], r[1]), reverse=True)
        self.ranked = [(score, share, s) for score, _n, share, s in ranked]

    def _news(self, text: str) -> int:
        """How many words of ``text`` say what the question does not."""
        return sum(
            _novel(t, self.weigher.terms, self.speakers) and t.lower() not in FRAMING
            for t in re.findall(r"[\w'’-]+", text.split("[shares", 1)[0])
        )

    def answer(self) -> DirectAnswer:
        if not self.ranked:
            return DirectAnswer(NOTHING, [], False, self.kind)
        extract = getattr(self, f"_{self.kind}")
        line, sources = extract()
        top_share = self.ranked[0][1]
        firm = bool(line) and top_share >= FIRM_SHARE and _gives(self.kind, sources[0])
        if not line:
            best = self.ranked[0][2]
            line, sources = _phrase_after(best.claim, self.weigher.terms), [best]
            firm = False
        if not line:
            return DirectAnswer(NOTHING, [], False, self.kind)
        return DirectAnswer(line if firm else f"{line} {WEAK}", sources, firm, self.kind)

    def _top(self, kind: str) -> list[Said]:
        return [s for _score, _share, s in self.ranked if _gives(kind, s)]

    def _date(self) -> tuple[str, list[Said]]:
        asked_words = date_words(self.question)
        for s in self._top("date")[:3]:
            found = [d for d in said_dates(s.claim, s.day) if not _restates(d, asked_words)]
            if found:
                # A day named on the calendar over one said relative to today.
                named = [d for d in found if d.exact and re.search(r"\d", d.phrase)]
                exact = named or [d for d in found if d.exact] or found
                near = self._nearest(s.claim, [d.phrase for d in exact])
                when = next(d for d in exact if d.phrase == near)
                return when.written, [s]
        best = self.ranked[0][2]
        if best.day:
            # Nothing says when: what memory knows is the day it was told.
            return f"around {written_date(best.day)}", [best]
        return "", [best]

    def _duration(self) -> tuple[str, list[Said]]:
        for s in self._top("duration")[:3]:
            found = _DURATION.search(s.claim) or _SINCE.search(s.claim)
            if found:
                return found.group(0).strip(), [s]
        return "", [self.ranked[0][2]]

    def _number(self) -> tuple[str, list[Said]]:
        for s in self._top("number")[:3]:
            found = _NUMBER.search(s.claim)
            if found:
                tail = _unit_after(s.claim[found.end() :])
                return f"{found.group(0)} {tail}".strip(), [s]
        return "", [self.ranked[0][2]]

    def _count(self) -> tuple[str, list[Said]]:
        """A number said with the thing counted, else the distinct mentions across
        sessions (one per session: a thing told twice in one talk is one thing)."""
        asked = self.weigher.terms - self.weigher.names
        for s in self._top("count")[:3]:
            for found in _NUMBER.finditer(s.claim):
                near = s.claim[found.end() : found.end() + 40]
                if _stem_set(near) & asked:
                    return f"{found.group(0)} {_unit_after(near)}".strip(), [s]
        top = self.ranked[0][0]
        sessions: dict[str, Said] = {}
        for score, _share, s in self.ranked:
            if score >= LIST_SHARE * top and s.session not in sessions:
                sessions[s.session or s.item.page_id] = s
        n = len(sessions)
        return f"{n} (mentions in {n} session{'s' if n > 1 else ''})", list(sessions.values())

    def _person(self) -> tuple[str, list[Said]]:
        exclude = self.weigher.names
        for s in self._close_to_best("person"):
            found = _people(s.claim, exclude, self.known)
            if found:
                return self._nearest(s.claim, found), [s]
        # "Who ...?" answered in the first person: the speaker is the person.
        for _score, _share, s in self.ranked[:3]:
            if re.match(r"(?:I|I'm|I've|We)\b", s.claim) and not set(analyze(s.speaker)) & exclude:
                return s.speaker, [s]
        return "", [self.ranked[0][2]]

    def _bridged_place(self) -> tuple[str, list[Said]] | None:
        """A place the best sentence names only by what happens there ("in the city where
        my sister lives"): the named place of the sentence that says that (who said it
        counts: "I'm flying to Tromsø to see my sister")."""
        best = self.ranked[0][2]
        found = _WHERE_CLAUSE.search(best.claim)
        if not found:
            return None
        clause = set(analyze(found.group(1))) - set(analyze(" ".join(STOP)))
        if best.speaker and re.search(r"\b(?:my|our)\b", found.group(1), re.I):
            clause |= set(analyze(best.speaker))
        for s in self.all:
            said = set(analyze(s.text)) | set(analyze(s.speaker))
            if s is best or len(clause & said) < min(2, len(clause)):
                continue
            places = self._places(s)
            if places:
                return self._nearest(s.text, places), [best, s]
        return None

    def _places(self, s: Said) -> list[str]:
        exclude = self.weigher.names | self.weigher.terms
        return [
            found.group(1)
            for found in _PLACE.finditer(s.claim or s.text)
            if not set(analyze(found.group(1))) <= exclude
            and found.group(1).split()[0].lower() not in STOP | _CALENDAR
            and not found.group(1).endswith(("'s", "’s"))
        ]

    def _place(self) -> tuple[str, list[Said]]:
        bridged = self._bridged_place()
        if bridged:
            return bridged
        exclude = self.weigher.names | self.weigher.terms
        # A named place first, from any of the best sentences: "in the city where my sister
        # lives" names none, the sentence that says where she lives does.
        for s in self._close_to_best("place", 5):
            places = self._places(s) if s.claim else []
            if places:
                return self._nearest(s.claim, places), [s]
        for s in self._top("place")[:3]:
            noun = _PLACE_NOUN.search(s.claim)
            if noun and not set(analyze(noun.group(1))) <= exclude | set(analyze("the my our")):
                return noun.group(1), [s]
        return "", [self.ranked[0][2]]

    def _close_to_best(self, kind: str, n: int = 3) -> list[Said]:
        """The first ``n`` sentences giving ``kind`` among those near the best score."""
        top = self.ranked[0][0]
        return [s for score, _share, s in self.ranked if _gives(kind, s) and score >= 0.5 * top][:n]

    def _nearest(self, text: str, options: list[str]) -> str:
        """Of ``options`` found in ``text``, the one said nearest the question's words."""
        hits = [
            m.start()
            for m in re.finditer(r"[\w'’-]+", text)
            if set(analyze(m.group(0))) & self.weigher.terms
        ]
        if not hits:
            return options[0]

        def distance(option: str) -> int:
            at = text.find(option)
            return min(abs(at - h) for h in hits)

        return min(options, key=distance)

    def _yesno(self) -> tuple[str, list[Said]]:
        best = self.ranked[0][2]
        text = best.claim if not points_back(best.claim) else f"{best.before} {best.claim}"
        negated = bool(_NEGATION.search(text.lower())) != bool(
            _NEGATION.search(self.question.lower())
        )
        verdict = "No" if negated else "Yes"
        hedge = (
            "Likely " if re.search(r"\b(?:would|could|might|likely)\b", self.question, re.I) else ""
        )
        reason = _phrase_after(text, self.weigher.terms, 10) or _content_phrase(text, 10)
        head = f"{hedge}{verdict.lower()}" if hedge else verdict
        return f"{head}; {reason}" if reason else head, [best]

    def _list(self) -> tuple[str, list[Said]]:
        """One item from each sentence that answers nearly as well as the best, gathered
        across sessions and deduplicated."""
        top = self.ranked[0][0]
        items: list[str] = []
        seen: set[frozenset[str]] = set()
        sources: list[Said] = []
        for score, _share, s in self.ranked:
            if score < LIST_SHARE * top or len(items) == MAX_ITEMS:
                break
            item = self._novel(s.before if points_back(s.claim) else s.claim, 3)
            key = _stem_set(item) - self.weigher.terms
            if not key or any(key & k for k in seen):
                continue
            seen.add(key)
            items.append(item)
            sources.append(s)
        return ", ".join(items), sources

    def _thing(self) -> tuple[str, list[Said]]:
        for _score, _share, best in self.ranked[:3]:
            if points_back(best.claim) and best.before:
                # "It was magical": what was magical is named in the sentence before.
                phrase = self._novel(best.before)
            else:
                phrase = self._novel(best.claim)
            if phrase:
                return phrase, [best]
        return "", [self.ranked[0][2]]

    def _novel(self, text: str, words: int = 5) -> str:
        return novel_phrase(text, self.weigher.terms, self.speakers, words)


def _unit_after(text: str) -> str:
    """What a number counts: the lower-case words right after it, to a clause's end ("5,600
    dollars; Oskar misread": "dollars")."""
    words = []
    for word in re.findall(r"[\w'’-]+|[^\w\s]", text)[:3]:
        if not re.match(r"[a-z][\w'’-]*$", word) or word in STOP | _PREPOSITIONS:
            break
        words.append(word)
    return " ".join(words)


def _restates(found: SaidDate, asked_words: set[str]) -> bool:
    """Whether a date in a sentence only repeats the time the question already names."""
    words = {w.lower() for w in re.findall(r"\w+", found.phrase)}
    return bool(words) and words <= asked_words


def direct_answer(question: str, evidence: list[EvidenceItem]) -> DirectAnswer:
    """The direct answer to ``question`` from ``evidence`` (see the module's docstring)."""
    sentences = read_sentences(evidence)
    if not sentences:
        return DirectAnswer(NOTHING, [], False, question_kind(question))
    return _Answerer(question, sentences).answer()
