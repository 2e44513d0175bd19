"""Questions asked of two people at once ("Do Jon and Gina both dance?", "Which city
have Ilse and Tomas both visited?"): what answers them is true of each, so one person's
sentence tells only half of it."""

from __future__ import annotations

import re

from kbmem.index.tenant import analyze

# Two names joined by "and" (or "&"): "Jon and Gina", "both Ilse and Tomas". A name is a
# capitalised word that is not the question's first (its wh-word or auxiliary).
_TWO_NAMES = re.compile(r"(?<=\s)([A-Z][\w-]+)(?:['’]s)?\s+(?:and|&)\s+([A-Z][\w-]+)\b")
# A sentence that speaks for both speakers at once: "we both", "both of us", "we're alike".
_SPEAKS_FOR_BOTH = re.compile(r"\b(?:both|we|we['’](?:re|ve|d|ll)|us|our|each\s+other)\b", re.I)


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
