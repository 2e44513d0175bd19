"""Reading a misspelled query term as the index spells it: a keyword search takes a term that
no live interval holds as the nearest term that some do ("fesetival" as "festival",
"reccomended" as "recommended")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from whoosh.support.levenshtein import distance

if TYPE_CHECKING:
    from kbmem.index.generation import Generation

# One edit away for a term of SPELL_ONE characters or more (as the index spells it, stemmed),
# two for SPELL_TWO or more, the first letter kept. Shorter terms have too many neighbours to
# guess from ("Greene" is one edit from "greet"), so they are left as asked.
SPELL_ONE = 6
SPELL_TWO = 9
SPELL_PREFIX = 1  # letters a near spelling must share at the start


def nearest_spelling(gen: Generation, term: str) -> str:
    """``term`` (analyzed) if a live interval holds it, else the term within SPELL_ONE or
    SPELL_TWO's edits that the most live intervals hold, nearest first, or ``term`` itself if
    there is none."""
    most = 2 if len(term) >= SPELL_TWO else 1 if len(term) >= SPELL_ONE else 0
    if not most or any(ch.isdigit() for ch in term) or gen.doc_frequency(term):
        return term
    reader = gen.searcher().reader()
    best: tuple[int, int, str] | None = None
    for near in reader.terms_within("text", term, most, prefix=SPELL_PREFIX):
        near = near.decode("utf-8") if isinstance(near, bytes) else str(near)
        if near == term or not (count := gen.doc_frequency(near)):
            continue
        rank = (distance(near, term, limit=most), -count, near)
        best = rank if best is None else min(best, rank)
    return term if best is None else best[2]
