"""The answer to "why" (kbmem.research.what): the reason a causal connective or a verb of
causing gives, the reason only implied by "so" or a verb of wanting, and the purpose a deed's
infinitive says ("signed it to show our friendship")."""

from __future__ import annotations

import re

from kbmem.index.late import FUNCTION_WORDS
from kbmem.index.tenant import analyze
from kbmem.research.grammar import (
    CLAUSE_CUT,
    REASON_WORDS,
    SUBJECT_WORDS,
    trim_end,
)
from kbmem.research.phrases import (
    same_stem,
)
from kbmem.research.shown import split_caption
from kbmem.research.spans import (
    PHRASE_WORDS,
)

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
    rf"(?:\bbecause(?:\s+of)?|'cause|’cause|\bso that|{_SINCE_CAUSE})\s+([^.;!?]{{3,}})", re.I
)
_CAUSER = re.compile(
    r"^([^.;!?]{3,60}?)\s+(?:gave|made|got|inspired|pushed|motivated|led)\s+(?:me|us)\b", re.I
)
_CLEFT_END = re.compile(r"\s+(?:is|was|are|were)\s+(?:what|who)\s*$", re.I)
_SO = re.compile(r"([^.;!?]{8,}?),?\s+so\s+(?!that\b|much\b|many\b|far\b)([^.;!?]{3,})", re.I)
_PURPOSE = re.compile(
    r"\b(?:wanted|want|wants|needed|need|needs|hoped|hope|hoping)\s+(to\s+[^.;!?,]{3,})", re.I
)


_NOMINATIVE = frozenset("i we he she they".split())


def _subject_word(word: str) -> bool:
    """Whether ``word`` is a pronoun only ever a subject, alone or with its verb ("I'm",
    "we're"; not "it" or "you", which are objects too)."""
    return re.split(r"['’]", word.lower())[0] in _NOMINATIVE


def reason_given(text: str) -> str:
    """The reason a causal connective or a verb of causing in ``text`` gives."""
    found = _BECAUSE.search(text)
    if found:
        # A reason is a clause, to its comma (at most REASON_WORDS words).
        clause = re.split(r",\s", found.group(1), maxsplit=1)[0]
        words = clause.split()[:REASON_WORDS]
        # A reason put first ends where the main clause's subject starts ("since I'm
        # tired I'm staying in": "I'm tired").
        end = next(
            (n for n, w in enumerate(words) if n >= 2 and _subject_word(w)),
            len(words),
        )
        return " ".join(trim_end(words[:end]))
    found = _CAUSER.match(text)
    if not found:
        return ""
    # "X is what inspired me": a pseudo-cleft equates X with the causer, so the causer is X
    # alone, not "X is what".
    causer = _CLEFT_END.sub("", found.group(1))
    return " ".join(causer.split()[-PHRASE_WORDS:])


# "Why did X <verb> …?": people give the purpose of a deed as an infinitive after the verb
# that says the deed ("They signed it to show our friendship"): the deed's verb, at most a
# short object, then "to" and a verb. Right after the verb, with no object between, "to"
# opens the verb's own complement ("decided to run"), the deed and not its purpose; and
# a verb of aspect or will in the question ("start blogging", "decide to run") leads to
# the deed's verb, which is the one the purpose is said after. "To" before a determiner
# or a pronoun is a preposition ("gave it to my mom"), which says where, not why.
_WHY_VERB = re.compile(
    r"^\s*[Ww]hy\s+(?:did|does|do|has|have|had|will|would|is|are|was|were)\s+"
    r"[A-Z][\w-]*(?:['’]s(?:\s+[a-z][\w'’-]*){1,2}?)?"
    r"(?:\s+(?:and|&)\s+[A-Z][\w-]*)?"
    r"(?:\s+(?:start|begin|keep|try|decide|choose|want|need|plan)(?:\s+to)?)?"
    r"\s+([a-z][\w'’-]*)\b"
)
_TO_NOT_A_VERB = SUBJECT_WORDS | frozenset(
    "a an the my your his her its our their this that these those some any every each".split()
)
_PURPOSE_AFTER = re.compile(
    r"((?:\s+[\w'’-]+){1,4}?)\s+(?:in\s+order\s+)?to\s+([a-z][\w'’-]*(?:\s+[^.;!?,]+)?)"
)


def purpose_of(question: str, text: str, by_asked: bool = True) -> str:
    """Asked why someone did a deed (its verb after the subject: _WHY_VERB), the purpose
    ``text`` says by "to <verb> …" right after that verb ("signed it to show our
    friendship": "to show our friendship"), at most REASON_WORDS words; "" when the
    question is of another shape or ``text`` says no such purpose. ``by_asked``: whether
    ``text`` was said by the person the question names."""
    asked = _WHY_VERB.match(question)
    if not asked or asked.group(1).lower() in FUNCTION_WORDS:
        return ""
    verb = set(analyze(asked.group(1)))
    said = split_caption(text)[0]
    for found in re.finditer(r"[\w'’-]+", said):
        if not verb or not same_stem(set(analyze(found.group(0))), verb):
            continue
        if re.search(
            r"\b(?:a|an|the|my|your|his|her|its|our|their)\s+$", said[: found.start()], re.I
        ):
            continue  # after a determiner the word is a noun ("a sign of our friendship")
        if not _deed_of_asked(said[: found.start()], by_asked):
            continue
        after = _PURPOSE_AFTER.match(said, found.end())
        if not after or after.group(2).split()[0].lower() in _TO_NOT_A_VERB:
            continue
        # The purpose is a clause: it ends where another begins (a dash, "but", "so").
        clause = CLAUSE_CUT.split(after.group(2), maxsplit=1)[0]
        words = trim_end(f"to {clause}".split()[:REASON_WORDS])
        if len(words) >= 2:
            return " ".join(words)
    return ""


def _deed_of_asked(before: str, by_asked: bool) -> bool:
    """Whether the deed whose verb follows ``before`` can be the asked person's, by the
    pronoun that is its subject: in their own words they say "I" or "we", in another's
    "you" is the listener, the asked person or not ("I love how you use it to tell your
    stories", said by the person asked, is the listener's deed)."""
    subject = re.search(r"([\w'’]+)\s+(?:[a-z]+ly\s+|just\s+|also\s+)?$", before)
    word = subject.group(1).lower() if subject else ""
    if word == "you":
        return not by_asked
    if word in ("i", "we"):
        return by_asked
    return True


def implied_reason(text: str, asked: set[str]) -> str:
    """The reason ``text`` implies for what the question (its terms ``asked``) asks "why"
    of: the clause before "so" when the one after says what was asked, else a purpose."""
    found = _SO.search(text)
    if found and set(analyze(found.group(2))) & asked:
        # The clause itself, after what leads into it ("Besides that, my cousin …").
        clause = found.group(1).rsplit(",", 1)
        cause = clause[-1] if len(clause[-1].split()) >= 3 else found.group(1)
        return " ".join(trim_end(cause.split()[-REASON_WORDS:]))
    found = _PURPOSE.search(text)
    if not found:
        return ""
    return " ".join(trim_end(found.group(1).split()[:REASON_WORDS]))
