"""A request about someone who speaks in memory, put the way that person would have said it.

Conversational memory is first-person speech: John said "I'm doing kickboxing", not "John does
kickboxing". A request asks about him in the third person ("What martial arts has John
done?"), and a small sentence-embedding model places that question far from the statement that
answers it. Rewritten in John's voice ("martial arts I done") and compared with John's own
turns only, the nearest turns are the ones where he talks about it. Measured on LoCoMo (`kbmem
bench retrieval`): dense page recall@8 went from 0.751 to 0.828 with the rewrite, and the
hybrid page ranking, which fuses this list with BM25, from 0.854 to 0.876.

Only the semantic search hears the request this way; keyword search drops these words anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .index import analyze

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


def subject(request: str, speakers: Iterable[str], ignore: Iterable[str] = ()) -> str | None:
    """The one speaker the request names (by full or first name), or None when it names none,
    several, or a first name that several speakers share."""
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
    found: set[str] = set()
    for name in sorted(names, key=len, reverse=True):  # full names first
        pattern = _named(name)
        if pattern.search(rest):
            found.add(name)
            rest = pattern.sub(" ", rest)
    owners: dict[str, set[str]] = {}
    for name in names:
        forms = _forms(name)
        if len(forms) > 1:
            owners.setdefault(forms[1], set()).add(name)
    for first, who in owners.items():
        if _named(first).search(rest):
            if len(who) > 1:
                return None  # "Sam" could be either of two Sams
            found |= who
    if len(found) != 1:
        return None
    return next(iter(found))


def voiced(request: str, speakers: Iterable[str], ignore: Iterable[str] = ()) -> Voiced | None:
    """The request in the voice of the one speaker it is about, or None (see ``subject``)."""
    who = subject(request, speakers, ignore)
    if who is None:
        return None
    text = request.strip().rstrip("?!. ")
    for form in sorted(_forms(who), key=len, reverse=True):
        text = re.sub(r"(?<![\w'’])" + re.escape(form) + r"['’]s\b", "my", text)
        text = _named(form).sub("I", text)
    text = _PRONOUN.sub(lambda m: _PRONOUNS[m.group(1).lower()], text)
    text = _WH.sub("", text, count=1)
    text = _AUX.sub("", text, count=1)
    text = " ".join(text.split())
    if not analyze(text):
        return None
    return Voiced(text, who)
