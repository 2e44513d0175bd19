""" "Extracted, never invented" as a check: every word of a direct answer's first line is a
word of what the answer read or of the line's own fixed forms (the verdicts, "Memory does
not say.", the weak-evidence tag, dates written from days memory gives, durations and counts
written in words, list joints, the region a named city lies in). `kbmem bench answers`
reports the lines that fail it, for either engine; the property test
(tests/agent/test_answer_fidelity.py) holds the offline engine to it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kbmem.dates import MONTHS, WEEKDAYS
from kbmem.research.kin import WRITTEN as KIN_WRITTEN
from kbmem.research.places import region_of
from kbmem.research.types import EvidenceItem
from kbmem.textutil import CITATION

_WORD = re.compile(r"[^\W_]+")
_YEAR = re.compile(r"^\d{4}$")
_STAMP_YEAR = re.compile(r"\b(\d{4})-\d\d-\d\d")
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy"
    " eighty ninety hundred thousand half once twice times"
)
# The words the answer's own forms write, whatever memory says: verdicts, the nothing line,
# the weak tag, how dates, stretches and counts are written, list and possessive joints.
FIXED_WORDS = (
    frozenset(
        (
            "likely yes no memory does not say weak evidence and or s the a an of to from"
            " around about shortly few couple between before after early late mid"
            " week weekend weeks month months"
            " year years day days hour hours minute minutes since until in on"
            f" {_NUMBER_WORDS}"
        ).split()
    )
    | frozenset(WEEKDAYS)
    | frozenset(MONTHS)
)


def words(text: str) -> list[str]:
    """``text``'s words, lower case, without punctuation (an apostrophe splits a word)."""
    return _WORD.findall(text.lower())


def evidence_texts(evidence: Iterable[EvidenceItem]) -> list[str]:
    """What the evidence holds: each interval's lines as committed (with the page's turn
    headers, which name speakers and days) and the excerpt shown."""
    return [text for item in evidence for text in (item.source_text, item.excerpt)]


def _years(known: set[str], texts: Sequence[str]) -> set[int]:
    """The years memory names: four-digit words and the years of its turns' stamps."""
    stamped = {int(y) for text in texts for y in _STAMP_YEAR.findall(text)}
    return {int(w) for w in known if _YEAR.match(w)} | stamped


_CUT = re.compile(r"([^\W_]+)…")
# A line that says memory holds nothing on the question (kbmem.agent.offline), which may name
# the question's words memory never mentions.
_ABSENCE = re.compile(r"^\s*Memory holds nothing\b")
# "Indiana (Fort Wayne)": the region, then the city memory names (kbmem.research.where).
_REGION_OF = re.compile(r"([^()]+?)\s+\(([^()]+)\)")


def _regions(line: str, known: set[str]) -> set[str]:
    """The words of the regions ``line`` gives for a place the evidence names, written
    before it in brackets, when the gazetteer puts the place there."""
    found: set[str] = set()
    for region, place in _REGION_OF.findall(line):
        if set(words(place)) <= known and any(
            region_of(place, kind) == region.strip() for kind in ("state", "country", "continent")
        ):
            found.update(words(region))
    return found


def unfounded_words(line: str, texts: Iterable[str]) -> list[str]:
    """The words of ``line`` that neither ``texts`` (what the answer read: see
    evidence_texts) nor the line's fixed forms give. A number passes when memory writes it,
    or as a day of a month named in the line, or as a year near one memory names (a
    relative date, "two years ago", resolves to one)."""
    if _ABSENCE.match(line):
        return []  # it says what memory lacks, and the words it names are the question's
    line = CITATION.sub(" ", line)  # a citation points at what was read; it claims nothing
    texts = list(texts)
    known = {w for text in texts for w in words(text)}
    line_words = words(line)
    names_month = any(w in MONTHS for w in line_words)
    years = _years(known, texts)
    known |= _regions(line, known)
    unfounded: list[str] = []
    # A line cut short (kbmem.research.direct.bounded) may end inside a word, "…" after it,
    # and the weak tag after that.
    cut = {w for found in _CUT.findall(line) for w in words(found)[-1:]}
    for word in line_words:
        if word in known or word in FIXED_WORDS:
            continue
        if word in cut and any(k.startswith(word) for k in known):
            continue
        # A relation as written of a person ("mother") for the word it was spoken with ("mom").
        if any(spoken in known for spoken, written in KIN_WRITTEN.items() if written == word):
            continue
        if word.isdigit():
            value = int(word)
            if names_month and 1 <= value <= 31:
                continue
            if any(abs(value - y) <= 12 for y in years):
                continue
        unfounded.append(word)
    return unfounded
