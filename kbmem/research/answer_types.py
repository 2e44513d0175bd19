"""What kind of answer a question asks for (``question_kind``: the one typer of questions),
and whether a sentence gives one.

"When is the offsite?" asks for a time: of the sentences of a turn that speaks of the offsite,
"Dates as Priya proposed: Tuesday 28 to Thursday 30 April." answers it, though only its
neighbour says "offsite", and "On-call for the offsite: …" does not, though it does. "How
many" and "how much" ask for a number. Other questions ask for no kind of answer that a
pattern can tell in any sentence ("where": "in the city where my sister lives" names no
place), and ``answer_type`` gives None for them."""

from __future__ import annotations

import re

from kbmem.dates import MONTHS
from kbmem.index.tenant import analyze
from kbmem.research.state import term_set

# Asked "when" or "how many", a sentence that gives no time or number counts this much.
TYPE_MISS_WEIGHT = 0.5
# Asked "when", a sentence whose only times name no month, year or date ("for the
# Wednesday", "next week", "at 09:00") counts this much: "Dates as Priya proposed: Tuesday 28
# to Thursday 30 April." answers "when is the offsite?" better than the sentence before it,
# "The offsite will be … at the university for the Wednesday". Below the agent's share for a
# sentence that takes the question's words from the one before it (CONTEXT_SHARE), so that
# a dated sentence right after a vague one that names the subject is quoted with it instead.
TYPE_VAGUE_WEIGHT = 0.75
# A sentence that says nothing but the question's own words (and words that only keep a
# conversation going) answers nothing: "Okay, the data store." It still counts this much,
# for a question that asks whether something is so ("Is the launch on 28 April?").
ECHO_ONLY_WEIGHT = 0.5
FILLER = frozenset(
    analyze(
        "okay ok yes yeah yep no nope right sure well thanks thank great good cool fine "
        "alright hmm oh ah wow hi hello hey please let's start next agreed exactly"
    )
)

_MONTH = "|".join(m.capitalize() for m in MONTHS if m != "may")
_MONTH_ABBR = "|".join(m[:3].capitalize() for m in MONTHS if m != "may")
_WEEKDAY = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
# Capitalised names only ("march" and "may" are verbs too), and "May" only beside a number.
_TIME = re.compile(
    rf"\b(?:{_MONTH}|(?:{_MONTH_ABBR})\.?(?=\s+\d)|{_WEEKDAY})\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)?\s+May\b|\bMay\s+\d{1,2}\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}[:.]\d{2}\s*(?:[ap]\.?m\.?)?\b|\b\d{1,2}\s*[ap]\.?m\.?\b"
    r"|\b(?:19|20)\d{2}\b|\bQ[1-4]\b"
    r"|(?i:\b(?:yesterday|today|tonight|tomorrow|weekend|noon|midnight"
    r"|(?:last|next|this|every|each|the\s+following)\s+(?:week|month|year|quarter|sprint"
    r"|spring|summer|autumn|fall|winter|morning|afternoon|evening|night)"
    r"|(?:\d+|a|an|one|two|three|four|five|six|few|several)\s+(?:days?|weeks?|months?|years?)"
    r"\s+(?:ago|later|before|after|from\s+now)"
    r")\b)"
)
_NUMBER = re.compile(
    r"\d"
    r"|(?i:\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty"
    r"|thirty|forty|fifty|hundred|thousand|million|dozen|half|double|twice|none)\b)"
)
_CALENDAR = re.compile(
    rf"\b(?:{_MONTH}|(?:{_MONTH_ABBR})\.?(?=\s+\d))\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)?\s+May\b|\bMay\s+\d{1,2}\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b(?:19|20)\d{2}\b|\bQ[1-4]\b"
)
PATTERNS = {"time": _TIME, "number": _NUMBER}
_OPENERS = re.compile(r"^(?:and|so|but|ok(?:ay)?|also)\s*,?\s+")
_YESNO = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will|should|might|may)\b",
    re.I,
)
_AUX = frozenset("is are was were do does did has have had can could would will should".split())
_NOT_PLURAL = frozenset("is was has does this his its us yes always sometimes news".split())
# What each kind of question expects a sentence to give, for the researcher's and the
# agent's choice of evidence (gives, merit): a time or a number.
_EXPECTED = {"date": "time", "count": "number", "number": "number"}


def question_kind(question: str) -> str:
    """The kind of answer ``question`` asks for: person, names, place, date, duration,
    number, count, list, choice, yesno or thing (from its wh-word and the words that shape
    what it asks)."""
    q = _OPENERS.sub("", question.strip().lower())
    if re.match(
        r"(?:on|in|at|by|since|until)?\s*(?:what|which)\s+(?:date|day|time|year|month|week)\b", q
    ):
        return "date"
    if re.search(r"\bhow\s+long\s+ago\b", q) or re.match(r"(?:since\s+|by\s+|until\s+)?when\b", q):
        return "date"
    if re.match(r"what\b.*\b(?:date|day|year)\s*\??$", q) and not re.search(
        r"\b(?:this|last|next|that|every|each)\s+(?:date|day|year)\s*\??$", q
    ):
        return "date"  # "What is the launch date?"
    if re.match(r"what\b.*\b(?:budget|cost|price|fee|salary|amount|age|score|number\s+of)\b", q):
        # The answer to "what is the budget?" is an amount; so is "the number of points".
        return "number"
    if re.search(r"\bhow\s+long\b|\bhow\s+many\s+(?:minute|hour|day|week|month|year)s\b", q):
        return "duration"  # "how many weeks passed" asks for a stretch of time
    if re.match(r"how\s+(?:late|early)\s+(?:did|was|were|is|are|will)\b", q):
        return "duration"  # "How late did the ferry leave?": by how long ("38 minutes late")
    if re.search(r"\bhow\s+many\b", q):
        return "count"
    if re.search(r"\bhow\s+(?:much|old|often|far)\b", q):
        return "number"
    if re.match(r"(?:what|which)\b.*\bnames\b", q):
        return "names"  # "What are her pets' names?": the names, gathered
    called = re.match(r"(?:what|which)\s+(is|was|are|were)\b.*\b(?:called|named)\s*\??$", q)
    if called:
        # "What are the three apps called?" asks their names; "What is her dog called?" one.
        return "names" if called.group(1) in ("are", "were") else "person"
    if re.match(r"(?:who\s+(?:have|are|were)|(?:what|which)\s+(?:people|friends))\b", q):
        return "names"  # "Who have written to her?", "What people …": several, gathered
    if re.match(r"(?:with\s+)?(?:who|whom|whose)\b", q) or re.search(
        r"\b(?:what|which)\s+(?:person|people|friend|name)\b"
        r"|^what(?:\s+is|\s+was|'s)\s+(?:the\s+)?name\s+of\b",
        q,
    ):
        return "person"
    if re.match(r"(?:from\s+)?where\b", q) or re.search(
        r"\b(?:what|which)\s+(?:city|country|town|place|state|location)\b", q
    ):
        return "place"
    if (_YESNO.match(q) or q.startswith("which")) and alternatives(q):
        return "choice"  # "Would she rather go to a national park or a theme park?"
    if _YESNO.match(q):
        return "yesno"
    # "What has X done?": the perfect asks for what has accumulated, a list; so does a
    # plural after "what" ("what instruments").
    if re.match(r"what\s+(?:has|have)\s+\w+", q) or _asks_plural(q):
        return "list"
    # "What does X do to relax?": the simple present of "do" asks what X does as a habit,
    # which is done many times and told of in many sessions, a list of activities.
    if asks_doing(q):
        return "list"
    return "thing"


# "What does X do (to relax)?": "do" the main verb, right after its subject (one to three
# words), in the simple present; not "… do for a living?" (a job: one thing), nor "do"
# after a modal or "to" ("What does X want to do …?", "… feel he could do …?": a plan or a
# possibility, one thing).
_SUBJECT_WORD = r"(?!(?:to|can|could|would|will|should|shall|might|may|must)\b)[\w'’-]+"
_DOING = re.compile(
    rf"^\s*what\s+(?:does|do)\s+{_SUBJECT_WORD}(?:\s+{_SUBJECT_WORD}){{0,2}}?\s+do\b"
    r"(?!\s+for\s+(?:a\s+)?living\b)",
    re.I,
)


def asks_doing(question: str) -> bool:
    """Whether ``question`` asks what someone does as a habit ("What does X do to
    relax?"): its answer is the activities done."""
    return bool(_DOING.match(question))


def without_form_note(question: str) -> str:
    """``question`` without a note after it on the form its answer takes ("… for Nate?
    Answer yes or no."): the note says how to answer, not what is asked; its "yes or no" is
    no choice offered and its words ("answer") are none of the question's terms."""
    return _FORM_NOTE.sub("?", question).strip()


_FORM_NOTE = re.compile(r"\?\s*(?:please\s+)?(?:answer|reply|respond)\b[^?]*$", re.I)
# "How …?" and "why …?" are answered by a clause in the speaker's voice ("by counting my
# steps"), not by a noun phrase.
CLAUSE_ASKED = re.compile(r"\s*(?:how|why)\b", re.I)


def alternatives(question: str) -> tuple[str, str] | None:
    """The two things a question that ends "… A or B?" offers to choose between, each as
    many words as B (articles aside), or None."""
    found = re.search(r"^(.*)\s+or\s+(.+?)\s*\??$", question.strip(), re.I)
    if not found:
        return None
    second = [w for w in found.group(2).split() if w.lower() not in ("a", "an", "the")]
    first = [w for w in found.group(1).split() if w.lower() not in ("a", "an", "the")]
    if not second or len(second) > 3 or len(first) <= len(second):
        return None
    start = len(first) - len(second)
    # An initial never stands alone: it opens the name after it ("C. S. Lewis"), so the
    # first option takes the initials its cut fell after, whole.
    while start > 0 and _INITIAL.fullmatch(first[start - 1]):
        start -= 1
    return " ".join(first[start:]), " ".join(second)


_INITIAL = re.compile(r"[A-Z]\.")


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


def answer_type(question: str) -> str | None:
    """What a sentence must give to answer ``question``: ``time`` (a question of kind date)
    or ``number`` (count, number), else None."""
    return _EXPECTED.get(question_kind(question))


def gives(kind: str, sentence: str) -> bool:
    """Whether ``sentence`` says something of ``kind`` (a time, a number)."""
    return bool(PATTERNS[kind].search(sentence))


def merit(sentence: str, terms: list[str], expected: str | None) -> float:
    """How much of what ``sentence`` covers of a question (its index ``terms``, the kind of
    answer it ``expected``) counts as an answer: 1, or less for a sentence that gives no
    answer of the kind asked for, or that says only the question's own words."""
    factor = 1.0
    if expected and not gives(expected, sentence):
        factor *= TYPE_MISS_WEIGHT
    elif expected == "time" and not _CALENDAR.search(sentence):
        factor *= TYPE_VAGUE_WEIGHT
    if not term_set(sentence) - set(terms) - FILLER:
        factor *= ECHO_ONLY_WEIGHT
    return factor
