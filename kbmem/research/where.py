"""The answer to "where" (kbmem.research.extract): ``place``, a place named where both
people asked name it, the places gathered asked "where has X been?", a place the best
sentence reaches through what happens there, one a sentence near the best names, else one
said with a determiner ("in the mountains")."""

from __future__ import annotations

import itertools
import re

from kbmem.index.tenant import analyze
from kbmem.research.extract import Extracted, gathered, named_elsewhere
from kbmem.research.grammar import asked_noun
from kbmem.research.joint import shared_item, shared_named
from kbmem.research.phrases import NOT_NAMES
from kbmem.research.places import KINDS, kind_of, names_of_kind, region_of
from kbmem.research.ranking import Ranking
from kbmem.research.said import STOP
from kbmem.research.spans import CALENDAR, PLACE, WHERE_CLAUSE, is_novel, stem_set
from kbmem.research.types import Said

# "in the mountains", "at my parents' house": a place said with a determiner, when no
# sentence names one (a grammatical shape, no list of place words).
_LOCATIVE = re.compile(
    r"\b(?:in|at|near|inside|outside)\s+((?:the|a|an|my|our|their|his|her|your)\s+"
    r"[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*)?)",
    re.I,
)


_APPOSITION = re.compile(r"\s*,\s*([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)\s*(?:[.,;:!?)]|$)")


def place(r: Ranking) -> Extracted:
    """A place the best sentence reaches through what happens there, else one a sentence
    near the best names, else one said with a determiner ("in the mountains"); of the kind
    of place the question names, when it names one (``_of_asked_kind``)."""
    line, sources = _place(r)
    return _of_asked_kind(r, line, sources)


def _of_asked_kind(r: Ranking, line: str, sources: list[Said]) -> Extracted:
    """Asked "which city/country/state/continent", ``line`` when the gazetteer does not know
    it or knows it as the kind asked; a place named by a known name of another kind (or
    none) gives way to a name of the asked kind a sentence near the best says, else to the
    region the named city lies in, with the city memory said in brackets ("Indiana (Fort
    Wayne)"). The question names the kind it asks for, and the region a city lies in is a
    fact about the city, not an invention."""
    kind = asked_noun(r.question).lower()
    if kind not in KINDS:
        return line, sources
    known = kind_of(line) if line else set()
    if line and (not known or kind in known):
        return line, sources
    exclude = r.weigher.names | r.weigher.terms
    for s in r.near():
        for name in names_of_kind(s.claim or s.text, kind):
            if not set(analyze(name)) <= exclude:
                return name, [s]
    region = region_of(line, kind) if line else None
    return (f"{region} ({line})", sources) if region else (line, sources)


def _place(r: Ranking) -> Extracted:
    """``place`` before the kind asked is checked."""
    shared = shared_named(r, lambda s: _places(r, s)) or shared_item(r, lambda s: _places(r, s))
    if shared:
        return shared  # "Which city have both Ilse and Tomas visited?"
    if re.match(r"\s*where\s+(?:has|have)\b", r.question, re.I):
        return _places_gathered(r)
    bridged = _bridged_place(r)
    if bridged:
        return bridged
    placed = r.close_to_best("place", 5)
    equated = _equated_place(r, placed[0] if placed else None)
    if equated:
        return equated
    for s in placed:
        places = _places(r, s)
        if places:
            return r.nearest(s.claim, places), [s]
    for s in r.near():
        found = _said_place(r, s)
        if found:
            # "since I moved from my home country": which country, its speaker names
            # where they say it again.
            return named_elsewhere(r, s, found.split(None, 1)[-1]) or (found, [s])
    return "", [r.best()]


def _equated_place(r: Ranking, placed: Said | None) -> Extracted | None:
    """Asked "which city …?", a name a sentence ranked above the first that names a place
    after a preposition (``placed``) says is such a city ("Barcelona is a must-visit
    city!"): a place is named as the subject of "is" as often as after "in" or "to"."""
    noun = asked_noun(r.question)
    if not noun:
        return None
    equated = re.compile(
        rf"\b((?:[A-Z][\w'’-]*\s+)*[A-Z][\w'’-]*)\s+(?:is|was|are|were)\s+"
        rf"(?:a|an|the|my|our|one\s+of\s+the)\s+(?:[\w'’-]+\s+){{0,3}}?{re.escape(noun)}s?\b"
    )
    exclude = r.weigher.names | r.weigher.terms
    for s in r.near():
        if s is placed:
            break
        found = equated.search(s.claim or s.text)
        if (
            found
            and found.group(1).split()[0] not in NOT_NAMES
            and not set(analyze(found.group(1))) <= exclude
        ):
            return found.group(1), [s]
    return None


def _said_place(r: Ranking, s: Said) -> str:
    """A place ``s`` says with a determiner ("in the mountains"), or the name set beside
    it ("in my home country, Sweden"); "" if none says more than the question."""
    exclude = r.weigher.names | r.weigher.terms
    for found in _LOCATIVE.finditer(s.claim):
        head, *words = found.group(1).split()
        # The noun phrase ends where a function or time word begins ("the mountains
        # last week").
        kept = list(itertools.takewhile(lambda w: is_novel(w, set(), set()), words))
        named = _APPOSITION.match(s.claim[found.end() :])
        if kept and named and set(analyze(named.group(1))) - exclude:
            return named.group(1)
        if kept and set(analyze(" ".join(kept))) - exclude:
            return " ".join([head, *kept])
    return ""


def _places_gathered(r: Ranking) -> Extracted:
    """Asked "where has X been?", the perfect asks for what has accumulated: the places
    the sentences answering nearly as well as the best one name, each once."""

    def place_of(s: Said) -> list[str]:
        named = _places(r, s)
        return [r.nearest(s.claim, named) if named else _said_place(r, s)]

    def is_new(place: str, found: list[str]) -> bool:
        key = stem_set(place)
        return not any(key & stem_set(f) for f in found)

    return gathered(r, place_of, is_new)


def _bridged_place(r: Ranking) -> Extracted | None:
    """A place the best sentence names only by what happens there ("in the city where
    my sister lives"): the named place of the sentence that says that (who said it
    counts: "I'm flying to Tromsø to see my sister")."""
    best = r.best()
    found = WHERE_CLAUSE.search(best.claim)
    if not found:
        return None
    clause = set(analyze(found.group(1))) - set(analyze(" ".join(STOP)))
    if best.speaker and re.search(r"\b(?:my|our)\b", found.group(1), re.I):
        clause |= set(analyze(best.speaker))
    for s in r.all:
        said = set(analyze(s.text)) | set(analyze(s.speaker))
        if s is best or len(clause & said) < min(2, len(clause)):
            continue
        places = _places(r, s)
        if places:
            return r.nearest(s.text, places), [best, s]
    return None


def _places(r: Ranking, s: Said) -> list[str]:
    exclude = r.weigher.names | r.weigher.terms
    return [
        found.group(1)
        for found in PLACE.finditer(s.claim or s.text)
        if not set(analyze(found.group(1))) <= exclude
        # A name is read past its article ("the UK", "the Netherlands"): "the" is a function
        # word, the name after it is not.
        and _name_head(found.group(1)) not in STOP | CALENDAR
        and not found.group(1).endswith(("'s", "’s"))
    ]


def _name_head(place: str) -> str:
    """The first word of the name ``place`` says, past an article, lowercased."""
    words = place.split()
    return (words[1] if words[0] == "the" and len(words) > 1 else words[0]).lower()
