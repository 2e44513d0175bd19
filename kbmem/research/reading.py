"""A request's words as the tenant's memory holds them, for judging what the evidence covers.

The keyword search already reads a word that no interval holds as the nearest word memory does
hold ("schedular" as "scheduler", see kbmem.index.tenant.Generation.spelled). Reflection and the
briefing judge coverage by the request's words, so they read it the same way: otherwise the
typed word is never covered, and in "Who maintains the zorbulator and the tide-window
schedular?" the word "tide-window" counted as missing too, because the evidence never held it
beside "schedular". A word memory holds nowhere, not even nearly ("zorbulator"), is named in the
briefing's open questions rather than passed over in silence: the evidence found for the rest of
the request says nothing of it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbmem.dates import date_words
from kbmem.index.tenant import analyze
from kbmem.research.state import term_set

if TYPE_CHECKING:
    from kbmem.research.toolkit import Toolkit

_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Reading:
    """``text``: the request with each word that memory holds only under a near spelling
    replaced by memory's term; ``near``: those words, typed word -> memory's term; ``unknown``:
    the words memory holds nowhere, as typed, in the request's order."""

    text: str
    near: dict[str, str] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)

    def typed(self, word: str) -> str:
        """``word`` of ``text`` as the request typed it."""
        for typed, held in self.near.items():
            if held == word:
                return typed
        return word

    def open_questions(self, texts: list[str]) -> list[str]:
        """What the briefing says of the words read here: the words memory holds nowhere,
        and each word read as a near one that ``texts`` (the evidence) show, as they write
        it ("'schedular' as 'scheduler'")."""
        out = []
        if self.unknown:
            out.append("Memory never mentions: " + ", ".join(f"'{w}'" for w in self.unknown))
        shown = []
        for typed, held in self.near.items():
            written = _written(held, texts)
            if written:
                shown.append(f"'{typed}' as '{written}'")
        if shown:
            out.append("Read as the nearest words memory holds: " + ", ".join(shown))
        return out


def read_request(toolkit: Toolkit, request: str, skip: frozenset[str]) -> Reading:
    """How memory holds ``request``'s words (``skip``: lower-cased words never judged, such
    as question words). A word is replaced only by a term that reads as itself again, so
    that what judges the replaced text finds the term that memory holds."""
    # A time the request names ("in February 2023") picks sessions: no word memory must hold.
    dated = date_words(request)
    words = [
        w
        for w in dict.fromkeys(_WORD.findall(request))
        if w.lower() not in skip and w.strip("'").lower() not in dated
    ]
    terms = {w: analyze(w) for w in words}
    terms = {w: ts for w, ts in terms.items() if ts}
    if not terms:
        return Reading(request)
    stats = toolkit.term_stats(sorted({t for ts in terms.values() for t in ts}))
    absent = [w for w, ts in terms.items() if all(stats.get(t, 0) == 0 for t in ts)]
    if not absent:
        return Reading(request)
    spellings = toolkit.spellings([t for w in absent for t in terms[w]])
    near: dict[str, str] = {}
    unknown: list[str] = []
    for word in absent:
        held = [spellings.get(t, t) for t in terms[word]]
        if held != terms[word] and all(analyze(h) == [h] for h in held):
            near[word] = " ".join(held)
        else:
            unknown.append(word)
    text = request
    if near:
        pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in near) + r")\b")
        text = pattern.sub(lambda m: near[m.group(1)], request)
    return Reading(text, near, unknown)


def _written(term: str, texts: list[str]) -> str:
    """A word of ``texts`` that reads as ``term``, as written there ("scheduler" for
    "schedul"); empty if none does."""
    for text in texts:
        if term not in term_set(text):
            continue
        for word in _WORD.findall(text):
            if analyze(word) == [term]:
                return str(word).lower()
    return ""
