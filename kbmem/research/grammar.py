"""The grammar the extractors of the direct answer share (kbmem.research.extract): English's
closed word classes that end a noun phrase or a clause, the question without the time it
names at its end (``untimed``) and the noun a "what N …?" question asks about
(``asked_noun``)."""

from __future__ import annotations

import itertools
import re

from kbmem.dates import MONTHS, WEEKDAYS
from kbmem.research.said import STOP
from kbmem.research.spans import PREPOSITIONS

# Words that say of a thing only that there is one (or more) of its class, not which one:
# determiners, quantifiers, order and the speaker's praise ("another movie", "a few
# books", "a new team", "my favorite game"). A phrase of these and the class noun names
# no member; the name said with it does.
UNSPECIFIC = frozenset(
    "a an the this that these those my your his her our their its some any another other "
    "others few several many various different couple lot lots bunch certain particular "
    "one two three new same next last first second favorite favourite great good nice "
    "awesome amazing cool fun whole entire own full".split()
)

CLAUSE_CUT = re.compile(r"\s*(?:[,;:!?]|\s[-–—]\s|\bbut\b|\bso\b|\bbecause\b)\s*", re.I)


# "What kind of flooring is …", "What book did …": the noun whose kind the question asks
# for, before the verb or auxiliary that follows it.
ASKED_NOUN = re.compile(
    r"^(?:(?:in|on|at|for|with|from|to|by|of)\s+)?(?:what|which)\s+"
    r"(?:(?:kind|type|sort|form|style)s?\s+of\s+)?"
    r"((?:[a-z][\w'’-]*\s+){0,2}?[a-z][\w'’-]*)\s+"
    r"(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will|should)\b",
    re.I,
)
# English's closed classes of determiners, prepositions and conjunctions: a noun phrase
# starts after them.
PHRASE_EDGE = frozenset(
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
    found = ASKED_NOUN.match(question.strip())
    if not found:
        return ""
    # A phrase of a preposition after the noun qualifies it ("what events for veterans"):
    # the noun asked about is the one before it.
    words = list(
        itertools.takewhile(lambda w: w.lower() not in PREPOSITIONS, found.group(1).split())
    )
    head = words[-1] if words else found.group(1).split()[-1]
    return "" if head.lower() in STOP else head


# A subject pronoun, alone or with the verb it is contracted with ("I'm", "we've").
SUBJECT = re.compile(r"^(?:i|we|you|he|she|they)(?:['’](?:m|re|ve|s|d|ll))?$", re.I)


REASON_WORDS = 10  # a reason is a clause, longer than a thing's phrase


FUNCTION_END = STOP | PREPOSITIONS


def trim_end(words: list[str], edge: frozenset[str] | set[str] = FUNCTION_END) -> list[str]:
    """``words`` without the words of ``edge`` at their end, the function words unless told
    (a clause keeps its subject, and a purpose its "to")."""
    while words and words[-1].lower() in edge:
        words = words[:-1]
    return words


CLAUSE_LINKS = frozenset(
    "is are was were be been and but so because which that who when while where if as "
    "since than then".split()
)


SUBJECT_WORDS = frozenset("i we you he she they it me us him her them".split())
WH_WORDS = frozenset("how what why who whom whose which".split())
