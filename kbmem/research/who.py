"""The answer to "who" (kbmem.research.extract): ``person``, a name the best sentences give
(not the question's own), someone said by relation ("my aunt"), or the speaker answering in
the first person; and ``names``, the names gathered from the sentences that answer nearly as
well as the best one."""

from __future__ import annotations

import re

from kbmem.index.tenant import analyze
from kbmem.research.extract import Extracted, _gathered, named_elsewhere
from kbmem.research.joint import shared_item
from kbmem.research.kin import kin
from kbmem.research.ranking import Ranking
from kbmem.research.spans import people, quoted_titles


def person(r: Ranking) -> Extracted:
    exclude = r.weigher.names
    shared = shared_item(r, lambda s: people(s.claim, exclude | r.speakers, r.known))
    if shared:
        return shared  # "Who is Ilse and Tomas's favourite singer?": whom both name
    best = r.best()
    if not people(best.claim, exclude, r.known):
        # The sentence that says most of the question tells of someone by relation ("My
        # mom and I made dinner last night"): it answers "who" over a name another sentence
        # gives, most often the listener's ("Wow, John!").
        whose, kinship = kin(best.claim, best.speaker)
        if kinship and not set(analyze(kinship)) & r.weigher.terms:
            # "my aunt" is "my aunt, Rosa" where its speaker names her.
            return named_elsewhere(r, best, kinship) or (f"{whose} {kinship}", [best])
    for s in r.close_to_best("person"):
        found = people(s.claim, exclude, r.known)
        if found:
            return r.nearest(s.claim, found), [s]
    # No name: a person said by relation, the subject a sentence opens with ("My aunt
    # believed in volunteering": the speaker's aunt).
    for _score, _share, s in r.ranked[:3]:
        relation = _RELATION.match(s.claim)
        if relation and not set(analyze(relation.group(2))) & r.weigher.terms:
            named = named_elsewhere(r, s, relation.group(2))
            if named:
                return named
            whose = relation.group(1)
            owner = f"{s.speaker}'s" if whose.lower() in ("my", "our") else whose
            return f"{owner} {relation.group(2)}".strip(), [s]
    # "Who ...?" answered in the first person: the speaker is the person.
    for _score, _share, s in r.ranked[:3]:
        if re.match(r"(?:I|I'm|I've|We)\b", s.claim) and not set(analyze(s.speaker)) & exclude:
            return s.speaker, [s]
    return "", [r.best()]


_RELATION = re.compile(
    r"^\s*(my|our|his|her|their)\s+([a-z][\w'’-]*)\b(?!\s+(?:is|was|has)\b)", re.I
)


def names(r: Ranking) -> Extracted:
    """The names (not the question's own) that the sentences answering nearly as well as
    the best one give, gathered and deduplicated."""
    # The speakers are who talk, not whom they name.
    exclude = r.weigher.names | r.speakers
    return _gathered(
        r,
        lambda s: untitled_people(s.claim, exclude, r.known),
        lambda name, found: name not in found,
    )


def untitled_people(text: str, exclude: set[str], known: frozenset[str]) -> list[str]:
    """The names ``text`` gives (spans.people) outside the titles it quotes: words in
    quotes are a work's title ("Charlotte's Web"), not whom it names."""
    titles = quoted_titles(text)
    return [n for n in people(text, exclude, known) if not any(n in t for t in titles)]
