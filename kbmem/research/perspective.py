"""A request about someone who speaks in memory, put the way that person would have said it.

Conversational memory is first-person speech: John said "I'm doing kickboxing", not "John does
kickboxing". A request asks about him in the third person ("What martial arts has John
done?"), and a small sentence-embedding model places that question far from the statement that
answers it. Rewritten in John's voice ("martial arts I done") and compared with John's own
turns only, the nearest turns are the ones where he talks about it.

Only the semantic search hears the request this way; keyword search drops these words anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kbmem.index.tenant import analyze

_WH = re.compile(
    r"^\s*(?:what|which|who|whom|whose|where|when|why|how)\b"
    r"(?:\s+(?:many|much|long|often|far|old|kinds?\s+of|types?\s+of|sorts?\s+of))?\s*",
    re.I,
)
_AUX = re.compile(r"\b(?:has|have|had|does|do|did|is|are|was|were)\b\s*", re.I)
# Third-person pronouns, which in a request about one person refer to that person.
_PRONOUNS = {
    "he": "I",
    "she": "I",
    "him": "me",
    "his": "my",
    "her": "my",
    "hers": "mine",
    "himself": "myself",
    "herself": "myself",
}
_PRONOUN = re.compile(r"\b(" + "|".join(_PRONOUNS) + r")\b", re.I)
_WORDS = re.compile(r"[^\W_]+")
# "I" after a preposition is "me" ("recommended to Joanna", in Joanna's voice).
_BOTH = re.compile(r"\bboth\b", re.I)
_OBJECT_I = re.compile(r"\b(to|with|for|from|about|at|by|of|without)\s+I\b")


@dataclass(frozen=True)
class Voiced:
    """``text``: the request as ``speaker`` would have said it."""

    text: str
    speaker: str


def _forms(speaker: str) -> list[str]:
    """How a request may name a speaker: the full name, or the first name alone."""
    forms = [speaker]
    first = speaker.split()[0] if speaker.split() else ""
    if first != speaker and len(first) > 1 and first[0].isupper():
        forms.append(first)
    return forms


def _named(form: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w'’])" + re.escape(form) + r"(?![\w])")


def named(request: str, speakers: Iterable[str], ignore: Iterable[str] = ()) -> list[str] | None:
    """The speakers the request names (by full or first name), in the order it names them;
    None when it names a first name that several speakers share."""
    skip = set(ignore)
    words = set(_WORDS.findall(request))

    def may_be_named(name: str) -> bool:
        # A cheap first look (a memory may hold thousands of speakers): the request holds
        # the first word of the name ("O" of "O'Brien", "Dr" of "Dr. Lee").
        first = _WORDS.match(name)
        return first is not None and first.group(0) in words

    names = [
        s
        for s in dict.fromkeys(speakers)
        if s and s not in skip and s[0].isupper() and may_be_named(s)
    ]
    rest = request
    found: dict[str, int] = {}
    for name in sorted(names, key=len, reverse=True):  # full names first
        match = _named(name).search(rest)
        if match:
            found[name] = match.start()
            rest = _named(name).sub(lambda m: " " * len(m.group(0)), rest)
    owners: dict[str, set[str]] = {}
    for name in names:
        forms = _forms(name)
        if len(forms) > 1:
            owners.setdefault(forms[1], set()).add(name)
    for first, who in owners.items():
        match = _named(first).search(rest)
        if match:
            if len(who) > 1:
                return None  # "Sam" could be either of two Sams
            found.setdefault(next(iter(who)), match.start())
    return sorted(found, key=found.__getitem__)


def subject(request: str, speakers: Iterable[str], ignore: Iterable[str] = ()) -> str | None:
    """The one speaker the request names, or None when it names none, several, or a first
    name that several speakers share."""
    found = named(request, speakers, ignore)
    return found[0] if found and len(found) == 1 else None


def voiced(request: str, speakers: Iterable[str], ignore: Iterable[str] = ()) -> Voiced | None:
    """The request in the voice of the speaker it is about, or None (see ``named``).

    A request that names one speaker is about them. One that names two is about the first
    it names, and the other is who that speaker talked to: in a conversation of two, they
    call each other "you" ("What things has Nate recommended to Joanna?" is Nate's "things I
    recommended to you"). A request naming more is no one's."""
    who = named(request, speakers, ignore)
    if not who or len(who) > 2:
        return None
    speaker, others = who[0], who[1:]
    text = request.strip().rstrip("?!. ")
    for name, (mine, me) in [(speaker, ("my", "I"))] + [(o, ("your", "you")) for o in others]:
        for form in sorted(_forms(name), key=len, reverse=True):
            text = re.sub(r"(?<![\w'’])" + re.escape(form) + r"['’]s\b", mine, text)
            text = _named(form).sub(me, text)
    if others:  # "both I and you": what each did, in one voice; and "her" could be either
        text = _BOTH.sub("", text)
    else:
        text = _PRONOUN.sub(lambda m: _PRONOUNS[m.group(1).lower()], text)
    text = _OBJECT_I.sub(r"\1 me", text)
    text = _WH.sub("", text, count=1)
    text = _AUX.sub("", text, count=1)
    text = " ".join(text.split())
    if not analyze(text):
        return None
    return Voiced(text, speaker)
