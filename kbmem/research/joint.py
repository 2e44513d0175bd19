"""Questions asked of two people at once ("Do Jon and Gina both dance?", "Which city
have Ilse and Tomas both visited?"): what answers them is true of each, so one person's
sentence tells only half of it."""

from __future__ import annotations

import re
from collections.abc import Callable

from kbmem.index.tenant import analyze
from kbmem.research.ranking import Ranking
from kbmem.research.types import Said

# Two names joined by "and" (or "&"): "Jon and Gina", "both Ilse and Tomas". A name is a
# capitalised word that is not the question's first (its wh-word or auxiliary).
_TWO_NAMES = re.compile(r"(?<=\s)([A-Z][\w-]+)(?:['’]s)?\s+(?:and|&)\s+([A-Z][\w-]+)\b")
# A sentence that speaks for both speakers at once: "we both", "both of us", "we're alike".
_SPEAKS_FOR_BOTH = re.compile(r"\b(?:both|we|we['’](?:re|ve|d|ll)|us|our|each\s+other)\b", re.I)


# What says that the answer is held by both people, not by either: "both", "share", "in
# common", "similar", or one thing that is the two people's ("X and Y's favourite …").
_SHARED = re.compile(
    r"\bboth\b|\bshare[ds]?\b|\bin\s+common\b|\bsimilar\b|\b(?:and|&)\s+[A-Z][\w-]+['’]s\b"
)


def joint_names(question: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The stems of the two people ``question`` asks of together, or None."""
    found = _TWO_NAMES.search(question)
    if not found:
        return None
    return frozenset(analyze(found.group(1))), frozenset(analyze(found.group(2)))


def speaks_for_both(text: str) -> bool:
    """Whether ``text`` says something of its speaker and another together ("we both
    love it"), not of the speaker alone."""
    return bool(_SPEAKS_FOR_BOTH.search(text))


def shared_item(r: Ranking, items_of: Callable[[Said], list[str]]) -> tuple[str, list[Said]] | None:
    """Asked what two people share ("Which city have both Ilse and Tomas visited?"), the
    item of the kind asked (``items_of``: the places, the names, … a sentence gives) that
    a sentence of each of them gives, the best ranked first; None when the question asks of
    no two people's shared thing, or no item is given for both."""
    pair = joint_names(r.question)
    if not pair or not _SHARED.search(r.question):
        return None
    found: list[list[tuple[frozenset[str], str, Said]]] = [[], []]
    for _score, _share, s in r.ranked:
        about = set(analyze(s.speaker)) | set(analyze(s.claim or s.text))
        for n, person in enumerate(pair):
            if person & about:
                found[n] += [(frozenset(analyze(i)), i, s) for i in items_of(s) if i]
    for key, item, s in found[0]:
        other = next((o for k, _i, o in found[1] if k & key and o is not s), None)
        if other is not None:
            return item, [s, other]
    return None
