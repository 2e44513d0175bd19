"""Questions asked of two people at once ("Do Jon and Gina both dance?", "Which city
have Ilse and Tomas both visited?"): what answers them is true of each, so one person's
sentence tells only half of it."""

from __future__ import annotations

import re
from collections.abc import Callable

from kbmem.index.tenant import analyze
from kbmem.research.answer_types import CLAUSE_ASKED
from kbmem.research.grammar import UNSPECIFIC, untimed
from kbmem.research.lists import CLASS_NEAR, asked_class
from kbmem.research.meaning import nearness
from kbmem.research.ranking import NEAR, Ranking
from kbmem.research.said import CIVILITIES, STOP, asks
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


_WORD = re.compile(r"[\w'’-]+")


def said_by_both(r: Ranking, line: str, sources: list[Said]) -> str:
    """Asked what two people share ("What do both Ilse and Tomas love the smell of?"),
    ``line`` (a phrase cut from one person's sentence, ``sources``) cut to the run of its
    words that a sentence of the other person also says, among the sentences near the best
    (Ranking.near's bar): what is true of both is what both say, and the rest of one
    person's phrase is what only they said of it ("rain made me so calm" beside the other's
    "I love rain": "rain"). Unchanged when the other says none of its words but the
    question's, or when the question asks of no two people's shared thing."""
    pair = joint_names(r.question)
    if (
        not pair
        or not _SHARED.search(r.question)
        # Asked "how" or "why", the answer is a clause of one person's doing ("by
        # dancing"), which the other says in their own words: no cut to the words both say.
        or CLAUSE_ASKED.match(r.question)
        or len(sources) != 1
    ):
        return line
    said_by = set(analyze(sources[0].speaker))
    others = [p for p in pair if not p & said_by]
    if len(others) != 1:
        return line  # not said by one of the two (or the two are one name)
    asked = r.weigher.terms | r.speakers
    best = ""
    for s in r.at_least(NEAR):
        if not others[0] & set(analyze(s.speaker)):
            continue
        run = _run_said_in(line, set(analyze(s.claim or s.text)) - asked)
        if len(run) > len(best):
            best = run
    return best or line


def _run_said_in(line: str, stems: set[str]) -> str:
    """The longest run of ``line``'s words that opens and closes with a word of ``stems``
    that says something (not STOP) and holds no other word but those and words that say
    little."""
    words = _WORD.findall(line)
    best: list[str] = []
    start = None
    for n, word in enumerate([*words, ""]):
        said = bool(word) and word.lower() not in STOP and bool(set(analyze(word)) & stems)
        if said and start is None:
            start = n
        if start is not None and (not word or not (said or word.lower() in STOP)):
            run = words[start:n]
            while run and (run[-1].lower() in STOP or not set(analyze(run[-1])) & stems):
                run.pop()
            if len(run) > len(best):
                best = run
            start = n if said else None
    return " ".join(best)


_POSSESSIVE_END = re.compile(r"['’]s$")
# The thing a possessive of the two asks for: "Tim and John's favorite basketball player".
_THEIR_NOUN = re.compile(r"\b(?:and|&)\s+[A-Z][\w-]+['’]s\s+([a-z][\w\s'’-]*?)\s*\??\s*$")


def shared_named(
    r: Ranking, items_of: Callable[[Said], list[str]]
) -> tuple[str, list[Said]] | None:
    """Asked what two people share, the item (``items_of``: the names, the places, … a
    sentence gives) that each of them says in a sentence of their own anywhere in the
    evidence, not only among the ranked ones: the one the embedder reads as nearest the
    class asked ("favorite basketball player", "city"), unless far from it (lists.CLASS_NEAR).
    Who someone's favourite is, each says in their own words ("LeBron is the man"), which
    rarely repeat the question's; a name both merely mention (a friend, a town passed
    through) is kept out by the class. None when the question names no class."""
    pair = joint_names(r.question)
    if not pair or not _SHARED.search(r.question):
        return None
    kind = _class_asked(r.question)
    if not kind:
        return None
    found: list[dict[frozenset[str], tuple[str, Said]]] = [{}, {}]
    for s in r.all:
        if asks(s.text):
            continue  # a question names what it asks about, it tells no one's liking
        for n, person in enumerate(pair):
            if person & set(analyze(s.speaker)):
                for item in items_of(s):
                    item = _POSSESSIVE_END.sub("", item)  # "LeBron's skills": LeBron
                    found[n].setdefault(frozenset(analyze(item)), (item, s))
    both = [
        (item, s, other)
        for key, (item, s) in found[0].items()
        for other_key, (_other_item, other) in found[1].items()
        # One names what the other does, maybe in fewer words ("LeBron", "LeBron James"),
        # not another thing of a word in common ("board games", "video games").
        if key and other_key and (key <= other_key or other_key <= key)
    ]
    if not both:
        return None
    near = nearness(kind, [item for item, _s, _other in both])
    closest = max(range(len(both)), key=near.__getitem__)
    if near[closest] < CLASS_NEAR:
        return None
    item, s, other = both[closest]
    return item, [s, other]


def _class_asked(question: str) -> str:
    """The class the shared item is of: the noun phrase after the two people's possessive,
    else the "which N"/"what N" the question asks (lists.asked_class)."""
    found = _THEIR_NOUN.search(question)
    return found.group(1) if found else asked_class(untimed(question))


# Words that say nothing of which thing (a determiner, "favorite", "new") end a run of
# content words, as STOP words and civilities do.
_NO_THING = STOP | CIVILITIES | UNSPECIFIC
RUN_WORDS = 3  # a thing is named in a few words ("homeless shelter", "watching movies")


def shared_thing(r: Ranking) -> tuple[str, list[Said]] | None:
    """Asked what thing two people share ("What animal do both Ilse and Tomas like?"), the
    run of content words each of them says (shared_named: of the class asked, nearest to
    it), said in full as far as both say it ("watching movies", not "movies"). None when
    the question asks of no two people's shared thing of a named class."""
    asked = r.weigher.terms | r.speakers

    def runs_in(s: Said) -> list[str]:
        return [run for run in _content_runs(s.claim or s.text) if not asked & set(analyze(run))]

    shared = shared_named(r, runs_in)
    if not shared:
        return None
    item, sources = shared
    # The longest run holding the item that both sentences say.
    both = set(runs_in(sources[0])) & set(runs_in(sources[1]))
    fuller = [run for run in both if f" {item} " in f" {run} "]
    return max(fuller, key=len, default=item), sources


def _content_runs(text: str) -> list[str]:
    """The runs of up to RUN_WORDS words of ``text`` (a picture's caption aside) that hold
    no word that says little (_NO_THING)."""
    words = _WORD.findall(text.split("[shares", 1)[0])
    runs: list[list[str]] = [[]]
    for word in words:
        if word.lower() in _NO_THING:
            runs.append([])
        else:
            runs[-1].append(word)
    return [
        " ".join(run[at : at + n])
        for run in runs
        for n in range(1, RUN_WORDS + 1)
        for at in range(len(run) - n + 1)
    ]
