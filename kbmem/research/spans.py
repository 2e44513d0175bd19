"""Answer spans: the words of a sentence that give the answer of one kind (a duration, a
number and what it counts, a name, a place) or say what the question does not (a phrase,
a title in quotes, the whole list a phrase is an item of), with the function words at its
ends trimmed."""

from __future__ import annotations

import itertools
import re

from kbmem.dates import MONTHS, WEEKDAYS
from kbmem.index.tenant import analyze
from kbmem.research.said import STOP

PHRASE_WORDS = 6  # a "what" answer is a phrase, not a sentence
# A capitalised word, or a run of them ("New York", "Isle of Man"), runs on through any
# letters ("Tromsø", "Zoë"), not only ASCII ones; "I'm" and its kin are the speaker, never
# part of a name ("Now I'm"). A joining word ("of", "de", "van") is a whole word and joins
# only when a capitalised word follows it ("Isle of Man"): "Dune last week" names "Dune",
# not "Dune la", and "Rome of course" names "Rome".
_NOT_I = r"(?!I['’](?:m|ve|d|ll)\b)"
_CAPITALISED_WORD = rf"{_NOT_I}[A-Z](?:[^\W\d_]|['’-])+"
CAPS = re.compile(
    rf"\b({_CAPITALISED_WORD}(?:\s+(?:(?:of|de|la|van|von)\s+)*{_CAPITALISED_WORD})*)"
)
DURATION = re.compile(
    r"\b(?:(?:for|about|around|over|nearly|almost|only|just)\s+)?"
    r"(?:\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|fifteen|twenty|thirty|forty|fifty|a few|a couple of|several|half an?)\s+"
    r"(?:seconds?|minutes?|mins?|hours?|days?|nights?|weeks?|months?|years?|decades?)"
    r"(?:\s+(?:ago|now|long|old))?\b",
    re.I,
)
# "since March", "since 2016", "since I moved here": case matters, "since then" is no start;
# nor is "since we last spoke", which frames news by the talk before, not what was asked.
SINCE = re.compile(
    r"\b[Ss]ince\s+(?!(?:I|[Ww]e)\s+last\b)"
    r"(?:[A-Z]\w+|\d{4}|(?:I|[Ww]e|[Ss]he|[Hh]e|[Tt]hey)\s+\w+(?:\s+\w+)?)"
)
NUMBER = re.compile(
    r"\b(?:\d+(?:[.,]\d+)?%?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|dozen|hundred|thousand|million|twice|once)\b",
    re.I,
)
# "How often …?" asks for a frequency: how many times in a stretch of time, or every such
# stretch ("once or twice a year", "a few times a week", "every weekend").
_PERIOD = r"(?:day|night|morning|evening|week|weekend|month|year|season|summer|winter)"
_TIMES = r"(?:once|twice|(?:a\s+)?(?:few|couple\s+of|\w+)\s+times)"
_FREQUENCY = (
    rf"(?:(?:at\s+least|about|around|roughly)\s+)?"
    rf"(?:{_TIMES}(?:\s+or\s+{_TIMES})?\s+(?:a|an|per|every|each)\s+{_PERIOD}"
    rf"|(?:every|each)\s+(?:other\s+)?{_PERIOD}|hourly|nightly|daily|weekly|fortnightly|monthly"
    r"|yearly|annually)"
)
FREQUENCY = re.compile(rf"\b{_FREQUENCY}\b", re.I)
# A time of day: "04:00", "9.15", "7 pm", "noon".
CLOCK = r"(?:\d{1,2}[:.]\d{2}(?:\s*[ap]\.?m\.?)?|\d{1,2}\s*[ap]\.?m\.?|noon|midnight)"
# When a habit recurs: "nightly at 04:00", "every Monday at 9:15", "at 07:00 every day".
RECURRING = re.compile(
    rf"\b(?:at\s+{CLOCK}\s+)?(?:{_FREQUENCY}|every\s+(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day)"
    rf"(?:\s+at\s+{CLOCK})?\b",
    re.I,
)
PLACE = re.compile(
    r"\b(?:in|at|to|near|around|visited|visit|visiting)\s+"
    # "of", "de", "la" join a name's parts only as whole words ("Isle of Man"), not as the
    # start of the word after it ("the UK last Friday").
    r"((?:the\s+)?[A-Z][\w'’-]+(?:\s+(?:[A-Z][\w'’-]+|(?:of|de|la)\b))*)"
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
        # A clause after a dash opens with a capital as a sentence does ("… - Even though").
        at_start = m.start() == 0 or text[: m.start()].rstrip().endswith(
            (".", "!", "?", ":", " -", "–", "—")
        )
        words = name.split()
        if at_start and len(words) > 1 and words[0].lower() in STOP:
            # "And LeBron is the man": a joining word or pronoun opens the sentence, and
            # the capitalised word after it is no sentence's first.
            words = words[1:]
            name, at_start = " ".join(words), False
        if at_start and words[0] not in known:
            # Its first word is capitalised by the sentence, not shown to be a name: the
            # phrase is one when another of its words is capitalised ("New York"), else
            # what follows the joining words is ("Instead of Paris": Paris) if anything.
            if not any(w[0].isupper() for w in words[1:]):
                continue
            if words[1][0].islower():
                rest = list(itertools.dropwhile(lambda w: w[0].islower(), words[1:]))
                if not rest:
                    continue
                name = " ".join(rest)
        if name.split()[0].lower() in STOP | CALENDAR or set(analyze(name)) <= exclude:
            continue
        if all(TIME_WORD.match(w) for w in name.split()):
            continue  # "Last Friday": a day, no one
        out.append(name)
    return out


CALENDAR = frozenset(WEEKDAYS) | frozenset(MONTHS) | frozenset(m[:3] for m in MONTHS)


TIME_WORD = re.compile(
    r"^(?:yesterday|today|tonight|tomorrow|recently|lately|ago|last|next|week|weekend|month|"
    r"year|day|night|morning|evening|afternoon|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday|fri|sat|sun|every|btw|im|ive|its|thats|lots?)$",
    re.I,
)


def is_novel(token: str, terms: set[str], names: set[str]) -> bool:
    """Whether a token says something the question does not: a content word (no function
    word, time word or filler) outside the question's terms and the speakers' names."""
    low = token.lower().replace("’", "'")
    if not re.match(r"^[\w'-]+$", low) or low in STOP or TIME_WORD.match(low.replace("'", "")):
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
    "photo picture pic look check chat chatted talked spoke".split()
)


def quoted_title(text: str, asked: set[str]) -> str:
    """The first title in quotes in ``text`` that says more than the question's terms
    ``asked``; "" if none."""
    for found in _QUOTED.finditer(text):
        title = found.group(1) or found.group(2)
        if not set(analyze(title)) <= asked:
            return title
    return ""


def quoted_titles(text: str) -> list[str]:
    """Every title ``text`` says in quotes."""
    return [found.group(1) or found.group(2) for found in _QUOTED.finditer(text)]


def novel_phrase(
    text: str,
    terms: set[str],
    names: set[str],
    words: int = 5,
    whole_list: bool = True,
    constituent: bool = False,
    noun_asked: bool = False,
    activity_asked: bool = False,
) -> str:
    """The run of at most ``words`` words of ``text`` that says most that the question does
    not (its own words, the speakers' names, fillers and time words aside), nearest after the
    question's own words (the answer to "what is Jon reading?" follows "reading"); a title
    in quotes that the question does not give is taken whole. "" when it says nothing new.
    With ``constituent``, the run is cut as a phrase of its own (see _phrase_edges); with
    ``noun_asked`` too, a run that opens with a verb and its object gives the object (see
    _object_start)."""
    title = quoted_title(text, terms | names)
    if title:
        return title
    tokens = re.findall(r"[\w'’-]+|[.,;:!?()\[\]\"]", text)
    marks = [is_novel(t, terms, names) and t.lower() not in FRAMING for t in tokens]
    if constituent:
        # "We're", "they've": a subject with its verb says who, which the question names.
        marks = [m and _contracted(t) not in _SUBJECT for m, t in zip(marks, tokens, strict=True)]
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
    a, b = _phrase_edges(tokens, marks, best[1], best[2]) if constituent else best[1:]
    if constituent:
        b = _object_end(tokens, marks, a, _noun_phrase_end(tokens, marks, a, b))
    if constituent and noun_asked:
        a = _object_start(tokens, marks, a, b)
    if constituent and activity_asked:
        a = _verb_start(tokens, a)
    a, b = coordinated(tokens, a, b) if whole_list else (a, b)
    return joined(tokens[a : b + 1])


def _contracted(token: str) -> str:
    return token.lower().replace("’", "'")


# Words of closed classes that open a clause or a phrase of a preposition and are no stop
# word: a phrase that answers "what" neither starts nor ends with one ("'cause they help
# …", "after witnessing …").
_OPENS_CLAUSE = frozenset(
    "after before during since until through across along among between against without "
    "within upon via per nor plus yet because 'cause ’cause cause although though unless "
    "whereas".split()
)
# "a little", "a bit", "so much": a degree said after a verb phrase, no part of what it says.
_DEGREE_TAIL = re.compile(r"^(?:a|so|too)\s+(?:little|bit|lot|much)$", re.I)


def _phrase_edges(tokens: list[str], marks: list[bool], a: int, b: int) -> tuple[int, int]:
    """The phrase of tokens ``a`` to ``b`` cut as a constituent: without the clause's
    opener, the subject and the function words it starts with, the function words and a
    degree ("a little") it ends with; and, when it starts right after "and" or "or" (past
    function words only: "and how to find support"), with the conjunct before it, to the
    function word that opens that (see _first_conjunct): a phrase so cut is the second half
    of a coordination, and the answer is the whole of it."""
    lo, hi = a, b
    while lo < hi and (
        tokens[lo].lower() in _OPENS_CLAUSE | STOP | PREPOSITIONS
        or _contracted(tokens[lo]) in _SUBJECT
    ):
        lo += 1
    while hi > lo and tokens[hi].lower() in _OPENS_CLAUSE | STOP | PREPOSITIONS:
        hi -= 1
    if hi - lo >= 2 and _DEGREE_TAIL.match(f"{tokens[hi - 1]} {tokens[hi]}"):
        hi -= 2
    return _first_conjunct(tokens, marks, lo), hi


# Words that open a noun phrase and are never a noun's complement: a word said right
# before one ends a verb phrase, not a noun phrase. "her" and "that" are left out ("help
# her paint", "said that …"), being also a pronoun object and a clause's opener.
_OPENS_NOUN_PHRASE = frozenset("a an the this these those some my your his our their".split())


def _object_start(tokens: list[str], marks: list[bool], a: int, b: int) -> int:
    """Where the phrase of tokens ``a`` to ``b`` starts when the question asks for a thing
    (a noun phrase: "What did she research?"): past a leading word that a determiner
    follows ("find an adoption agency"), since a word before a determiner is a verb (or a
    preposition) and the noun phrase after it is its object, the thing asked, provided a
    word that says something new (``marks``) follows in the phrase; ``a`` otherwise."""
    at = a + 1
    if at > b or tokens[at].lower() not in _OPENS_NOUN_PHRASE:
        return a
    if a and tokens[a - 1].lower() == "to":
        return a  # an infinitive ("to clear my mind") is one phrase, its verb its head
    return next((n for n in range(at + 1, b + 1) if marks[n]), a)


HEAD_AFTER = 2  # words a noun phrase runs on past the phrase's window, to its head


def _noun_phrase_end(tokens: list[str], marks: list[bool], a: int, b: int) -> int:
    """Where the phrase of tokens ``a`` to ``b`` ends when it ends inside a noun phrase that
    a determiner opens in it and no preposition, conjunction or comma has closed ("this
    cool rainbow" of "this cool rainbow sidewalk for …"):
    at the words after it that say something new (``marks``), at most HEAD_AFTER, when a
    function word, a clause's end or the sentence's end follows them, since a noun phrase
    ends at its head, the last noun before its complement; ``b`` otherwise."""
    opener = next((n for n in range(b, a - 1, -1) if tokens[n].lower() in _OPENS_NOUN_PHRASE), None)
    closed = PREPOSITIONS | _COORDINATORS | _OPENS_CLAUSE | _CLAUSE_END | {","}
    if opener is None or any(tokens[n].lower() in closed for n in range(opener + 1, b + 1)):
        return b
    end = b
    while end + 1 < len(tokens) and end - b < HEAD_AFTER and marks[end + 1]:
        end += 1
    after = tokens[end + 1].lower() if end + 1 < len(tokens) else "."
    closes = after in STOP | PREPOSITIONS or after in _CLAUSE_END or after == ","
    return end if closes else b


OBJECT_AFTER = 3  # content words of an object a phrase runs on to


def _object_end(tokens: list[str], marks: list[bool], a: int, b: int) -> int:
    """Where the phrase of tokens ``a`` to ``b`` ends when its last word says something new
    and a determiner follows it ("remember and appreciate | those who served", "supporting
    | their mental health"): that word is a verb (or a preposition) and the noun phrase
    after it its object, without which the phrase is no constituent; so the phrase runs on
    through the determiner and the noun phrase's words (at most OBJECT_AFTER) to a
    function word or the clause's end. ``b`` otherwise."""
    if not marks[b] or b + 1 >= len(tokens) or tokens[b + 1].lower() not in _OPENS_NOUN_PHRASE:
        return b
    if b + 2 < len(tokens) and _DEGREE_TAIL.match(f"{tokens[b + 1]} {tokens[b + 2]}"):
        return b  # "clear my mind a little": a degree, no object
    end = b + 1
    while (
        end + 1 < len(tokens)
        and end - b - 1 < OBJECT_AFTER
        and tokens[end + 1].lower() not in STOP | PREPOSITIONS | _OPENS_CLAUSE
        and re.match(r"[\w'’-]+$", tokens[end + 1])
    ):
        end += 1
    return end if end > b + 1 else b


# Verbs of doing that the stop words hold: "made some dinner", "got a puppy".
_DOING = frozenset(
    "made make makes making got get gets getting went go goes going took did".split()
)
_NO_ACTION = frozenset("is are was were be been being am 's ’s".split())


def _verb_start(tokens: list[str], a: int) -> int:
    """Where the phrase starting at token ``a`` starts when the question asks for an
    activity ("What did they do?"), answered by a verb phrase: at the word before the
    determiner that opens the phrase ("made | some dinner"), that word being a verb whose
    object the phrase is, unless it is a preposition, a conjunction, a subject or a form of
    "be" (which names no action); ``a`` otherwise."""
    if a < 2 or tokens[a - 1].lower() not in _OPENS_NOUN_PHRASE:
        return a
    verb = tokens[a - 2].lower()
    if (
        not re.match(r"[a-z][\w'’-]*$", verb)
        or verb
        in (
            PREPOSITIONS
            | _OPENS_CLAUSE
            | _COORDINATORS
            | _SUBJECT
            | _NO_ACTION
            | _OPENS_NOUN_PHRASE
        )
        or verb in STOP - _DOING
    ):
        return a
    return a - 2


CONJUNCT_WORDS = 3


def _first_conjunct(tokens: list[str], marks: list[bool], a: int) -> int:
    """Where the coordination ends that the phrase starting at token ``a`` is the second
    conjunct of: the run of at most CONJUNCT_WORDS words that say something new (``marks``)
    right before the "and" or "or" that stands before ``a``, past at most CONJUNCT_WORDS
    function words ("self-acceptance and how to find support"); ``a`` when no conjunction
    stands there."""
    at = a - 1
    while at >= 0 and a - at <= CONJUNCT_WORDS and tokens[at].lower() in STOP - _COORDINATORS:
        at -= 1
    if at < 1 or tokens[at].lower() not in _COORDINATORS or not marks[at - 1]:
        return a
    start = at - 1
    while start > 0 and at - start < CONJUNCT_WORDS and marks[start - 1]:
        start -= 1
    return start


_CLAUSE_END = frozenset('.;:!?()[]"')
_COORDINATORS = frozenset({"and", "or", "&"})
PREPOSITIONS = frozenset("to of for in on at with about into onto from by than like".split())
_PRONOUNS = "i we you he she they it".split()
# A subject pronoun, alone or with its verb contracted ("I've", "we’re").
_SUBJECT = frozenset(_PRONOUNS) | frozenset(
    f"{p}{mark}{verb}"
    for p in _PRONOUNS
    for mark in "'’"
    for verb in ("m", "re", "s", "ve", "d", "ll")
)
# An item before the one found starts after the last of these in its segment ("and it
# stands for love": "love"; "We hiked the ridge": "hiked the ridge").
_ITEM_EDGE = (
    PREPOSITIONS
    | _SUBJECT
    | frozenset("and or but so because that which who is are was were be been".split())
)
ITEM_WORDS = 5  # an item of a list said in a sentence: a short phrase
LIST_WORDS = 16  # a list is cut after this many words


def coordinated(tokens: list[str], a: int, b: int) -> tuple[int, int]:
    """The tokens ``a`` to ``b`` widened to the whole list they are an item of, when they
    stand in one ("love, faith and strength": commas between short phrases, closed by "and"
    or "or"), within their clause; else as they are. An item before the one found is its
    segment's words after the last preposition, subject or clause word ("it stands for
    love" gives "love"), and a segment that needs such a cut is the list's first."""
    lo = a
    while lo > 0 and tokens[lo - 1] not in _CLAUSE_END:
        lo -= 1
    hi = b
    while hi + 1 < len(tokens) and tokens[hi + 1] not in _CLAUSE_END:
        hi += 1
    commas = [n for n in range(lo, hi + 1) if tokens[n] == ","]
    if not commas:
        return a, b
    bounds = [lo - 1, *commas, hi + 1]
    segments = [(x + 1, y - 1) for x, y in itertools.pairwise(bounds) if y - 1 >= x + 1]
    at = next((n for n, (x, y) in enumerate(segments) if x <= a <= y), None)
    if at is None:
        return a, b
    # A list has three items or more: three segments, or two whose last is two items
    # itself ("A, B and C"); a segment saying who does something ("and then I went home")
    # is a clause of its own, no item.
    inner = [
        n
        for n, (x, y) in enumerate(segments)
        if any(t.lower() in _COORDINATORS for t in tokens[x + 1 : y])
    ]
    if len(segments) < 3 and not inner:
        return a, b
    x, y = segments[at]
    if y - x + 1 > LIST_WORDS or _SUBJECT.intersection(t.lower() for t in tokens[a : y + 1]):
        return a, b  # a clause, not an item
    # The rest of its segment is the list's last item when it holds the "and" or "or".
    closes = any(t.lower() in _COORDINATORS for t in tokens[b + 1 : y + 1])
    first, last = a, y if closes else b
    # Who does something, said before the phrase in its segment ("and it stands for hope"):
    # the phrase is the list's first item. In the last segment it is in a clause of its own
    # ("Besides classes and workshops, I'm offering mentoring and training to …"): no item
    # of a list before it; an "and" right after it joins the phrase's own last conjunct.
    leads = _SUBJECT.intersection(t.lower() for t in tokens[x:a])
    if leads and at == len(segments) - 1:
        return a, _conjunct_end(tokens, b, y)
    for x, y in [] if leads else reversed(segments[:at]):
        if all(_no_item_word(t) for t in tokens[x : y + 1]):
            break  # "Recently, A and B", "Thanks, A and B": a clause's opener, no item
        run = x
        for n in range(y, x - 1, -1):
            if tokens[n].lower() in _ITEM_EDGE:
                run = n + 1
                break
        if run > y or y - run + 1 > ITEM_WORDS:
            break
        first = run
        if run != x:
            break
    for x, y in segments[at + 1 :]:
        if y - x + 1 > ITEM_WORDS + 1 or _SUBJECT.intersection(
            t.lower() for t in tokens[x : y + 1]
        ):
            break
        last = y
    words = [t for t in tokens[first : last + 1] if t != ","]
    if len(words) > LIST_WORDS or (first == a and last == b):
        return a, b
    return first, last


# Adverbs that comment on a whole sentence ("Honestly, …", "Besides, …"), said before it.
_SENTENCE_ADVERBS = frozenset(
    "honestly actually basically seriously anyway anyways besides otherwise luckily "
    "hopefully fortunately unfortunately personally finally frankly overall".split()
)


def _no_item_word(token: str) -> bool:
    """Whether ``token`` can make no item of a list: a function word, an interjection, a time
    word or a sentence adverb. A segment made only of such words is the opener of the
    clause the list is said in ("Recently,", "Honestly,", "Thanks,"), set off by its comma."""
    low = token.lower()
    return low in STOP | _SENTENCE_ADVERBS or bool(TIME_WORD.match(low))


def _conjunct_end(tokens: list[str], b: int, y: int) -> int:
    """Where the phrase ending at token ``b`` ends with the conjunct an "and" or "or" right
    after it joins ("mentoring and training to help …": "training"), within its segment
    (to ``y``): the words after the conjunction, to a preposition or clause word, at most
    ITEM_WORDS of them; ``b`` when no conjunction follows."""
    if b + 1 > y or tokens[b + 1].lower() not in _COORDINATORS:
        return b
    end = b + 2
    while end <= y and end - b - 2 < ITEM_WORDS and tokens[end].lower() not in _ITEM_EDGE:
        end += 1
    return end - 1 if end > b + 2 else b


def joined(tokens: list[str]) -> str:
    """Tokens as text, a comma written against the word before it."""
    return " ".join(tokens).replace(" , ", ", ")


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
