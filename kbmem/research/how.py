"""The answer to "how" (kbmem.research.what): the means ("by reminding myself"), what helps
someone do the verb asked, the state a linking verb gives ("The studio looks amazing"), how
someone feels, and how a thing asked to be described is said to be."""

from __future__ import annotations

import re

from kbmem.index.tenant import analyze
from kbmem.research.extract import Extracted
from kbmem.research.grammar import (
    CLAUSE_CUT,
    CLAUSE_LINKS,
    PHRASE_EDGE,
    REASON_WORDS,
    SUBJECT,
    SUBJECT_WORDS,
    WH_WORDS,
    trim_end,
)
from kbmem.research.phrases import (
    OBJECT_WORDS,
)
from kbmem.research.ranking import Ranking
from kbmem.research.said import POINTERS, STOP
from kbmem.research.spans import (
    PREPOSITIONS,
    TIME_WORD,
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
    if SUBJECT.match(subject) or subject.split()[0].lower().split("'")[0] in POINTERS:
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
        words = trim_end(found.group(1).split(",")[0].split()[:REASON_WORDS])
        if set(analyze(" ".join(words))) - asked:
            return "by " + " ".join(words)
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for link in _LINKING.finditer(text):
        at = len(re.findall(r"[\w'’-]+|[^\w\s]", text[: link.end()]))
        while at < len(tokens) and tokens[at].lower() in PHRASE_EDGE:
            at += 1
        following = tokens[at + 1].lower() if at + 1 < len(tokens) else ""
        if (
            at < len(tokens)
            and tokens[at].lower().endswith("ing")
            and following in PREPOSITIONS | PHRASE_EDGE | SUBJECT_WORDS
        ):
            continue  # "I'm still searching for": what the subject does, not what it is
        # A state is often said in words a phrase of content skips ("so happy", "amazing").
        end = at
        while end < len(tokens) and end - at < OBJECT_WORDS:
            low = tokens[end].lower()
            if (
                not re.match(r"[\w'’-]+$", low)
                or not re.search(r"\w", low)  # a dash alone parts clauses ("awesome - the story")
                or low in CLAUSE_LINKS | PREPOSITIONS | SUBJECT_WORDS | WH_WORDS
                or TIME_WORD.match(low)
            ):
                break
            end += 1
        words = trim_end(tokens[at:end], PHRASE_EDGE)
        if words and set(analyze(" ".join(words))) - asked:
            return " ".join(words)
    return ""


# A feeling is said by the complement of "feel" ("I felt free and light", "it makes me feel
# tiny", "dancing makes me so happy"): asked how someone feels or what something makes
# them, that complement answers, to where its clause ends.
ASKS_FEELING = re.compile(
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
# A phrase does not end leading on: with a preposition, a conjunction or a determiner.
_LEADS_ON_END = PREPOSITIONS | frozenset("and or the a an my our your his her their".split())


# A feeling is also said as what something did to someone: "Their words touched me" says
# the speaker felt touched; the participle of such a verb names the feeling. The object
# ends its clause ("moved us to a new town" is a move, no feeling).
_STIRRED = re.compile(
    r"\b(touched|moved|inspired|humbled|amazed|surprised|scared|frightened|worried|excited"
    r"|thrilled|overwhelmed|upset|hurt)\s+(?:me|us)(?=\s*(?:[.,;:!?]|$|\s+(?:so|deeply|"
    r"a\s+lot|and|but)\b))",
    re.I,
)


# Or as the speaker's regard for someone: "I really respect you for that" says how they
# feel about the one they speak to, to the end of its clause.
_REGARD = re.compile(
    r"\b(?:I|we)\s+(?:(?:really|truly|so|just|also|totally|do)\s+)*"
    r"((?:respect|admire|appreciate|value)\s+(?:you|him|her|them)\b[^.;:!?,]*)",
    re.I,
)


def regard(text: str) -> str:
    """The regard ``text``'s speaker says they hold someone in ("I really respect you for
    that": "respect you for that"), at most FEELING_WORDS words; "" if none."""
    found = _REGARD.search(text)
    words = found.group(1).split()[:FEELING_WORDS] if found else []
    words = trim_end(words, _LEADS_ON_END)  # cut at the cap, a phrase does not end leading on
    return " ".join(words)


def stirred(text: str) -> str:
    """The feeling ``text`` says something stirred in its speaker ("Their words touched
    me": "touched"); "" if none."""
    found = _STIRRED.search(text)
    return found.group(1).lower() if found else ""


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
        words = trim_end(words, _LEADS_ON_END)
        # "I feel I should go": a clause of its own, no feeling.
        if words and not SUBJECT.match(words[0]):
            return " ".join(words)
    return ""


# "How does Gina describe the studio?", "How was the trip?", "How is the store doing?": the
# thing asked to be described is the subject of the answer's linking verb ("The studio
# looks amazing", "Our team bond is awesome"), said by its head noun.
_ASKS_DESCRIBED = re.compile(
    r"^\s*how\s+(?:(?:do|does|did|would|will)\s+.+?\s+describe|is|was|are|were)\s+(.+?)"
    r"(?:\s+(?:doing|going|coming\s+along))?\s*\??\s*$",
    re.I,
)
# Where the described noun phrase ends: a preposition, a relative or a new clause's subject
# (a pronoun or a name: "the boat Tomas built").
_DESCRIBED_END = frozenset(
    "that which who where when he she they i we you it through during after before over".split()
)
DESCRIBED_SENTENCES = 5


def described_head(question: str) -> str:
    """The head noun of what a "how … describe N" or "how is N" question asks to be
    described ("the camping trip with Max": "trip"); "" for another question."""
    found = _ASKS_DESCRIBED.match(question)
    if not found:
        return ""
    phrase: list[str] = []
    for word in re.findall(r"[\w'’-]+", found.group(1)):
        if phrase and (word.lower() in PREPOSITIONS | _DESCRIBED_END or word[0].isupper()):
            break
        phrase.append(word)
    head = phrase[-1] if phrase else ""
    if not head or head.lower() in STOP or head[0].isupper() or head.endswith(("'s", "’s")):
        return ""  # a person ("How is Gina?") or a name, no thing described
    return head


def described_state(r: Ranking, question: str) -> Extracted | None:
    """Asked to describe a thing (``described_head``), what a linking verb right after its
    head noun says it is in one of the best sentences; None when none says so."""
    head = described_head(question)
    if not head:
        return None
    said_of = re.compile(
        rf"\b{re.escape(head)}s?(?:\s+(?=(?:is|are|was|were|looks?|looked|seems?|seemed"
        rf"|felt|feels?)\b)|(?=['’]s\b))",
        re.I,
    )
    asked = r.weigher.terms | r.weigher.names
    for s in r.near(DESCRIBED_SENTENCES):
        found = said_of.search(s.claim)
        if found:
            # The state is said in the noun's own clause, not in one after it.
            state = manner(CLAUSE_CUT.split(s.claim[found.start() :], maxsplit=1)[0], asked)
            if state:
                return state, [s]
    return None
