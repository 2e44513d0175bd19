"""Answer spans: the words of a sentence that give the answer of one kind (a duration, a
number and what it counts, a name, a place) or say what the question does not (a phrase,
a title in quotes), with the function words at its ends trimmed."""

from __future__ import annotations

import re

from kbmem.dates import MONTHS, WEEKDAYS
from kbmem.index.tenant import analyze
from kbmem.research.said import STOP

PHRASE_WORDS = 6  # a "what" answer is a phrase, not a sentence
CAPS = re.compile(r"\b([A-Z][a-zA-Z'’-]+(?:\s+(?:[A-Z][a-zA-Z'’-]+|of|de|la|van|von))*)")
DURATION = re.compile(
    r"\b(?:(?:for|about|around|over|nearly|almost|only|just)\s+)?"
    r"(?:\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|fifteen|twenty|thirty|forty|fifty|a few|a couple of|several|half an?)\s+"
    r"(?:seconds?|minutes?|mins?|hours?|days?|nights?|weeks?|months?|years?|decades?)"
    r"(?:\s+(?:ago|now|long|old))?\b",
    re.I,
)
SINCE = re.compile(r"\bsince\s+(?:[A-Z]\w+|\d{4}|(?:I|we|she|he|they)\s+\w+(?:\s+\w+)?)", re.I)
NUMBER = re.compile(
    r"\b(?:\d+(?:[.,]\d+)?%?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|dozen|hundred|thousand|million|twice|once)\b",
    re.I,
)
PLACE = re.compile(
    r"\b(?:in|at|to|near|around|visited|visit|visiting)\s+"
    r"((?:the\s+)?[A-Z][\w'’-]+(?:\s+(?:[A-Z][\w'’-]+|of|de|la))*)"
)
WHERE_CLAUSE = re.compile(r"\bthe\s+\w+\s+where\s+([^.;,!?]{3,60})", re.I)
NEGATION = re.compile(r"\b(?:not|never|no|don't|doesn't|didn't|won't|wouldn't|can't|isn't)\b")


def people(text: str, exclude: set[str], known: frozenset[str] = frozenset()) -> list[str]:
    """Capitalised names in ``text`` less ``exclude`` (the question's own names, as index
    terms). A word that is capitalised only because it opens a sentence counts when it is a
    ``known`` name (a speaker, or written capitalised inside a sentence elsewhere)."""
    out = []
    for m in CAPS.finditer(text):
        name = m.group(1)
        if not re.match(r"[A-Z][a-z]", name):
            continue  # "QR", "FL": codes, not names
        at_start = m.start() == 0 or text[: m.start()].rstrip().endswith((".", "!", "?", ":"))
        if at_start and " " not in name and name not in known:
            continue
        if name.split()[0].lower() in STOP | CALENDAR or set(analyze(name)) <= exclude:
            continue
        out.append(name)
    return out


CALENDAR = frozenset(WEEKDAYS) | frozenset(MONTHS) | frozenset(m[:3] for m in MONTHS)


_TIME_WORD = re.compile(
    r"^(?:yesterday|today|tonight|tomorrow|recently|lately|ago|last|next|week|weekend|month|"
    r"year|day|night|morning|evening|afternoon|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|fri|sat|sun|btw|im|ive|its|thats|lots?)$",
    re.I,
)


def is_novel(token: str, terms: set[str], names: set[str]) -> bool:
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
    marks = [is_novel(t, terms, names) and t.lower() not in FRAMING for t in tokens]
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


def phrase_after(text: str, terms: set[str], words: int = PHRASE_WORDS) -> str:
    """The words of ``text`` after its last word that says one of ``terms`` (the answer to
    "what did Caroline research?" follows "researching"), up to a clause's end; the words
    before it when nothing follows."""
    tokens = re.findall(r"[\w'’-]+|[.,;:!?()]", text)
    hits = [n for n, t in enumerate(tokens) if set(analyze(t)) & terms]
    if not hits:
        return content_phrase(text, words)
    after: list[str] = []
    for t in tokens[hits[-1] + 1 :]:
        if t in ".,;:!?()" or (after and t.lower() in ("and", "but", "because", "so", "which")):
            break
        after.append(t)
    phrase = trim(after)
    if len([w for w in phrase if w.lower() not in STOP]) == 0:
        before = [t for t in tokens[: hits[0]] if t not in ".,;:!?()"]
        phrase = trim(before[-words:])
    return " ".join(phrase[:words])


def trim(words: list[str]) -> list[str]:
    """``words`` without the function words at either end."""
    while words and words[0].lower() in STOP | PREPOSITIONS:
        words = words[1:]
    while words and words[-1].lower() in STOP | PREPOSITIONS:
        words = words[:-1]
    return words


PREPOSITIONS = frozenset("to of for in on at with about into onto from by than like".split())


def content_phrase(text: str, words: int) -> str:
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


def stem_set(text: str) -> frozenset[str]:
    return frozenset(analyze(text))


def unit_after(text: str) -> str:
    """What a number counts: the lower-case words right after it, to a clause's end ("5,600
    dollars; Oskar misread": "dollars")."""
    words = []
    for word in re.findall(r"[\w'’-]+|[^\w\s]", text)[:3]:
        if not re.match(r"[a-z][\w'’-]*$", word) or word in STOP | PREPOSITIONS:
            break
        words.append(word)
    return " ".join(words)
