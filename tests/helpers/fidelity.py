"""The issue's "extracted, never invented" as a check: every word of a direct answer's
first line is a word of the evidence's text or of the line's own fixed forms (the verdicts,
"Memory does not say.", the weak-evidence tag, dates written from days memory gives,
durations and counts written in words, list joints). Shared by the property test
(tests/agent/test_answer_fidelity.py) and the audit over cached benchmark evidence."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kbmem.dates import MONTHS, WEEKDAYS
from kbmem.research.kin import _WRITTEN as KIN_WRITTEN
from kbmem.research.types import EvidenceItem

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


def evidence_words(evidence: Iterable[EvidenceItem]) -> set[str]:
    """The words of what the evidence holds: the interval's lines as committed (with the
    page's turn headers, which name speakers and days) and the excerpt shown."""
    found: set[str] = set()
    for item in evidence:
        found.update(words(item.source_text))
        found.update(words(item.excerpt))
    return found


def _years(known: set[str], evidence: Iterable[EvidenceItem]) -> set[int]:
    """The years memory names: four-digit words and the years of its turns' stamps."""
    stamped = {int(y) for item in evidence for y in _STAMP_YEAR.findall(item.source_text)}
    return {int(w) for w in known if _YEAR.match(w)} | stamped


def unfounded_words(line: str, evidence: Iterable[EvidenceItem]) -> list[str]:
    """The words of ``line`` that neither the evidence nor the line's fixed forms give. A
    number passes when memory writes it, or as a day of a month named in the line, or as a
    year near one memory names (a relative date, "two years ago", resolves to one)."""
    evidence = list(evidence)
    known = evidence_words(evidence)
    line_words = words(line)
    names_month = any(w in MONTHS for w in line_words)
    years = _years(known, evidence)
    unfounded: list[str] = []
    # A line cut short ("…", kbmem.research.direct.bounded) may end inside a word.
    cut = line.rstrip().endswith("…")
    for n, word in enumerate(line_words):
        if word in known or word in FIXED_WORDS:
            continue
        if cut and n == len(line_words) - 1 and any(k.startswith(word) for k in known):
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
