"""The answer to "which N" (kbmem.research.what): the name a sentence gives as the N, as the
subject of the question's verb, or next, when the sentence says only that there is an N ("a new
team" … "The Minnesota Wolves!")."""

from __future__ import annotations

import re

from kbmem.index.tenant import analyze
from kbmem.research.extract import Extracted
from kbmem.research.grammar import (
    UNSPECIFIC,
    asked_noun,
)
from kbmem.research.phrases import (
    NOT_NAMES,
    named_as,
)
from kbmem.research.ranking import Ranking
from kbmem.research.shown import split_caption
from kbmem.research.types import Said


def named_which(r: Ranking, question: str) -> Extracted | None:
    """Asked "which N …?", the name a sentence near the best gives as N ("we're using
    Halyard Talent as the recruiter"), or, asked "which N <verb> …?", the name said as that
    verb's subject ("Inverlochy Boat Company signed a letter of intent"), of the subjects
    the one whose clause says most of the question; or, asked "which N is/was …?", the name
    the best sentence says is what the question says ("Skerrick Island Ferries will be our
    first pilot customer", without the noun "company"). A name is what "which" asks for."""
    exclude = r.weigher.names | r.speakers
    if _WHICH.match(question) and asked_noun(question):
        best = r.best()
        name = named_as(best.claim, r.weigher.terms, exclude)
        if name:
            return name, [best]
    asked = _WHICH_NOUN.match(question)
    if not asked:
        return None
    noun, after = asked.group(1), asked.group(2)
    verb = set() if after.lower() in _AUXILIARIES else set(analyze(after))
    for s in r.near():
        text = s.claim or s.text
        as_noun = re.search(
            rf"\b([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)\s+as\s+(?:the|our|their|its|a|an)\s+"
            rf"(?:[\w'’-]+\s+){{0,2}}?{re.escape(noun)}\b",
            text,
        )
        if as_noun and not set(analyze(as_noun.group(1))) & exclude:
            return as_noun.group(1), [s]
        if not verb:
            continue
        subjects = [
            m
            for m in re.finditer(r"\b([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)\s+([a-z]+)\b", text)
            if set(analyze(m.group(2))) & verb
            and m.group(1).split()[0] not in NOT_NAMES
            and not set(analyze(m.group(1))) & exclude
        ]
        if subjects:
            return max(subjects, key=lambda m: _clause_says(r, m.string[m.end() :])).group(1), [s]
    return None


# A name: capitalised words (joined by "of", "the", "and"), or a title in quotes.
_NAME = re.compile(
    r"\"([^\"]{2,60})\"|“([^”]{2,60})”"
    r"|\b([A-Z][\w'’-]*(?:\s+(?:(?:of|the|and)\s+)?[A-Z][\w'’-]*)*)"
)
# A verb's -ing form, which may open a sentence ("Learning German has been tough").
_GERUND = re.compile(r"[A-Z][a-z]{2,}ing")
# How many sentences of the speaker's next turn are read for the name.
NEXT_TURN_SENTENCES = 2


def unspecific(phrase: str, noun: str, asked: set[str]) -> bool:
    """Whether ``phrase`` (ending in ``noun``) says only that there is a ``noun``, or how
    many ("a new team", "a few movies"), not which one: its other words are UNSPECIFIC or
    the question's own terms ``asked`` ("different fantasy novels", asked which fantasy
    novels). Asked "which N", such a phrase repeats the question's noun, and the speaker
    names the one they mean next (``named_next``)."""
    words = phrase.lower().split()
    stems = set(analyze(noun))
    return (
        bool(words)
        and set(analyze(words[-1])) == stems
        and all(w in UNSPECIFIC or set(analyze(w)) <= asked for w in words[:-1])
    )


def told_name(text: str, exclude: set[str], asked: set[str]) -> str:
    """The first name or title in quotes ``text`` says (its words before a picture), none
    of whose words is one of ``exclude`` (the speakers, the question's names) and which says
    more than the question's terms ``asked``; a capitalised word opening the sentence is read
    as a name only with other capitalised words after it ("Harry Potter", not "Thanks")."""
    words, _scene = split_caption(text)
    for found in _NAME.finditer(words):
        name = found.group(1) or found.group(2) or found.group(3)
        parts = name.split()
        if found.group(3):
            opens = not words[: found.start()].strip(" \"“'‘-")
            if opens and _GERUND.fullmatch(parts[0]):
                parts = parts[1:]  # "Learning German …": a verb opens the sentence
            while parts and parts[0] in NOT_NAMES:
                parts = parts[1:]  # "The Minnesota Wolves": the name after its article
            if not parts or (opens and len(parts) == 1 and parts[0] == name.split()[0]):
                continue  # "Thanks!": any word opening a sentence is capitalised
            name = " ".join(parts)
        stems = set(analyze(name))
        if not stems or stems & exclude or stems <= asked:
            continue
        return name
    return ""


def named_next(r: Ranking, s: Said, phrase: str, noun: str) -> Extracted | None:
    """Asked which ``noun``, the name ``s``'s speaker gives next to the ``phrase`` that
    says only that there is one ("I just signed with a new team" … "The Minnesota Wolves!",
    "we watch a few movies. We love "Home Alone""): people say "a new N" and name it in the
    rest of their turn, or in their next turn, when the listener asks which. None when
    ``phrase`` says which, or no name follows."""
    exclude = r.weigher.names | r.speakers
    asked = r.weigher.terms | r.weigher.names
    if not unspecific(phrase, noun, asked) or s not in r.all:
        return None
    turn, turns, taken = (s.start, s.end), 0, 0
    for other in r.all[r.all.index(s) + 1 :]:
        if other.item is not s.item:
            break
        if (other.start, other.end) != turn:
            turn, turns = (other.start, other.end), turns + 1
            taken = 0
        if turns > 2:
            break
        if other.speaker != s.speaker:
            continue
        if turns:
            taken += 1
            if taken > NEXT_TURN_SENTENCES:
                continue
        name = told_name(other.claim or other.text, exclude, asked)
        if name:
            return name, [s, other]
    return None


def bare_noun(text: str, noun: str) -> str:
    """The phrase of ``text`` that is the ``noun`` with only a determiner before it ("a
    theme", "this game"), which noun_phrase passes over as saying nothing the question does
    not; "" if ``text`` says the noun no such way."""
    stems = set(analyze(noun))
    words = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, word in enumerate(words):
        if n and words[n - 1].lower() in _BARE_DETERMINERS and set(analyze(word)) == stems:
            return f"{words[n - 1]} {word}"
    return ""


# The determiners that say there is a thing, not which ("a theme", "this game").
_BARE_DETERMINERS = frozenset("a an this that one another some".split())


def named_after_bare(r: Ranking, s: Said, noun: str) -> Extracted | None:
    """Asked which ``noun``, the name the speaker of ``s`` gives next when ``s`` says the
    noun with a determiner alone ("my favorite one to jam to is a theme from a movie I
    really enjoy" … asked about that film, ""Harry Potter and the Philosopher's Stone" is
    special to me"): it says that there is one, and people name it next, as after "a new
    team" (see named_next)."""
    bare = bare_noun(s.claim, noun)
    return named_next(r, s, bare, noun) if bare else None


def named_near(r: Ranking, phrase: str, noun: str) -> Extracted | None:
    """Asked which ``noun``, when the ``phrase`` found says only that there is one, the
    first name a sentence near the best says ("Learning German has been tough" beside
    "Learning another language is tough"); None when none does."""
    exclude = r.weigher.names | r.speakers
    asked = r.weigher.terms | r.weigher.names
    if not unspecific(phrase, noun, asked):
        return None
    for s in r.near():
        name = told_name(s.claim or s.text, exclude, asked)
        if name:
            return name, [s]
    return None


def _clause_says(r: Ranking, after: str) -> int:
    """How many of the question's words the clause ``after`` a subject and its verb says."""
    clause = re.split(r"[;.]", after, maxsplit=1)[0]
    return len(set(analyze(clause)) & r.weigher.terms)


# "Which recruiter did …", "Which company signed …": the noun asked and the word after it.
_WHICH_NOUN = re.compile(r"^\s*[Ww]hich\s+([a-z][\w-]*)\s+([a-z][\w'’-]*)\b")
_AUXILIARIES = frozenset(
    "is are was were do does did has have had will would can could should shall may might "
    "must be been".split()
)


_WHICH = re.compile(
    r"^\s*(?:[Ww]hich|[Ww]hat)\s+[a-z][\w'’-]*\s+(?:is|was|were|are|will|has|had)\b"
)
