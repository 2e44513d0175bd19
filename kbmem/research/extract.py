"""What the extractors of the direct answer share. Each takes the answer out of the ranked
sentences (kbmem.research.ranking) for one kind of answer, and returns the line ("" when it
finds none) and the sentences it took it from (``Extracted``). kbmem.research.direct
registers them by kind (``EXTRACTORS``); each family has its module:

- ``when``: ``date`` (a date resolved against the day it was said, kbmem.dates.said_dates;
  the event a "when" question asks about; the times a turn tells) and ``duration``;
- ``counts``: ``number`` (a number and what it counts, a frequency) and ``count`` (of the
  distinct things the best sentences name, or of the occasions asked "how many times");
- ``who``: ``person`` and ``names`` (names gathered);
- ``where``: ``place`` (named, reached through what happens there, said with a
  determiner, or the places gathered);
- ``yesno``: ``yesno`` (yes or no with its reason) and ``choice`` (one of the two things an
  "A or B?" question offers);
- ``lists``: ``listed`` (a list gathered across sessions, deduplicated, its items typed by
  grammar and kept to the class asked);
- ``what``: ``thing`` (for "what" the noun phrase of the kind asked, the reason asked
  "why", the manner asked "how", a feeling, an event, the object of the preposition the
  question ends in or of the verb it asks about, or the phrase that says what the question
  does not).

Spans are found by the question's grammar and the sentence's, never by lists of topic
words: the grammar the kinds share is in ``grammar`` (closed word classes, the question
without its trailing time, the noun it asks about) and ``phrases`` (the constituents a
sentence gives: a noun phrase, what names a noun, a verb's object, the object of a
preposition, an -ing form). Here: the answer's type, the share of the question that makes
it firm, and what several kinds take their answer through: the items of the sentences
answering nearly as well as the best one, gathered, and the name a speaker gives a phrase
in another sentence."""

from __future__ import annotations

import re
from collections.abc import Callable

from kbmem.research.phrases import NAME_AFTER, named_by
from kbmem.research.ranking import Ranking
from kbmem.research.types import Said

Extracted = tuple[str, list[Said]]
# The best sentence must say this share of the question's weight for the answer to be firm
# (kbmem.research.direct), and for a yes or no to take its reason from it.
FIRM_SHARE = 0.5
LIST_SHARE = 0.6  # of the best sentence's score, for another sentence's item to join a list
MAX_ITEMS = 6


def gathered(
    r: Ranking,
    items_of: Callable[[Said], list[str]],
    is_new: Callable[[str, list[str]], bool],
) -> Extracted:
    """The items ``items_of`` finds in the sentences answering nearly as well as the best
    one (at least LIST_SHARE of its score), in their order, each once (``is_new``), at most
    MAX_ITEMS; and the sentences that gave them."""
    found: list[str] = []
    sources: list[Said] = []
    for s in r.at_least(LIST_SHARE):
        if len(found) == MAX_ITEMS:
            break
        new = [item for item in items_of(s) if item and is_new(item, found)]
        if new:
            found += new[: MAX_ITEMS - len(found)]
            sources.append(s)
    return ", ".join(found), sources


# A noun phrase said with a possessive ("my old area", "our home country") describes what
# it is; its speaker may name it where they say it again, the name set beside it.
_POSSESSIVE = r"(?:my|our|his|her|their)"


def named_elsewhere(r: Ranking, s: Said, phrase: str) -> Extracted | None:
    """The name ``s``'s speaker gives, in another sentence, to the ``phrase`` ``s`` says
    with a possessive ("my old area" — "my old area, West County"); None when ``s`` says it
    without one or no sentence names it."""
    said = re.compile(rf"\b{_POSSESSIVE}\s+{re.escape(phrase)}\b", re.I)
    if not said.search(s.claim or s.text):
        return None
    for other in r.all:
        if other is s or other.speaker != s.speaker:
            continue
        for found in said.finditer(other.text):
            if not NAME_AFTER.match(other.text[found.end() :]):
                continue  # a name or a title, not a phrase set beside it
            named = named_by(other.text[found.end() :], r.weigher.terms | r.weigher.names)
            if named:
                return named, [s, other]
    return None
