"""The answer to a question that asks for several things (kbmem.research.extract):
``listed``, one item from each sentence that answers nearly as well as the best, gathered
across sessions and deduplicated. An item is what the question's grammar asks for (the
object of its verb, a noun of the kind asked, a title, a name; ``_typed_item``), kept to
the class asked by meaning (``asked_class``, kbmem.research.meaning). ``list_items`` gives the
things ``count`` counts too (kbmem.research.counts)."""

from __future__ import annotations

import re

from kbmem.index.tenant import analyze
from kbmem.research.answer_types import asks_doing
from kbmem.research.extract import LIST_SHARE, MAX_ITEMS, Extracted
from kbmem.research.grammar import (
    ASKED_NOUN,
    CLAUSE_LINKS,
    PHRASE_EDGE,
    SUBJECT_WORDS,
    UNSPECIFIC,
    asked_noun,
    trim_end,
    untimed,
)
from kbmem.research.meaning import nearness
from kbmem.research.phrases import (
    asked_verb,
    done_object,
    gerund,
    noun_phrase,
    object_after,
    same_stem,
)
from kbmem.research.places import PLURAL_KINDS, kind_of
from kbmem.research.ranking import Ranking
from kbmem.research.said import STOP, asks, points_back
from kbmem.research.spans import (
    CALENDAR,
    PREPOSITIONS,
    TIME_WORD,
    people,
    quoted_title,
    quoted_titles,
    stem_set,
)
from kbmem.research.types import Said


def listed(r: Ranking) -> Extracted:
    """One item from each sentence that answers nearly as well as the best, gathered
    across sessions and deduplicated."""
    items, sources = list_items(r)
    return ", ".join(_shared_head_once(items, asked_noun(untimed(r.question)))), sources


def _shared_head_once(items: list[str], noun: str) -> list[str]:
    """``items`` with the noun the question asks about said once, after the last of them,
    when every item ends in it ("kundalini yoga, aerial yoga": "kundalini, aerial yoga"),
    as people list the kinds of one thing; the question already names it."""
    stems = stem_set(noun) if noun else frozenset()
    if len(items) < 2 or not stems:
        return items
    heads = [item.rsplit(None, 1) for item in items]
    if not all(len(h) == 2 and stem_set(h[1]) == stems for h in heads):
        return items
    return [h[0] for h in heads[:-1]] + [items[-1]]


def list_items(r: Ranking, per_session: bool = False) -> tuple[list[str], list[Said]]:
    """The distinct things the sentences scoring LIST_SHARE of the best one's say (a
    sentence that points back speaks through the one before it): the object of the verb
    the question asks about where a sentence says it, else its short phrase that says most
    the question does not; and their sentences. ``per_session``: a thing said again in
    another session counts again."""
    top = r.ranked[0][0]
    items: list[str] = []
    seen: list[tuple[str, frozenset[str]]] = []
    sources: list[Said] = []
    # An item is of what is asked, not only of whom: its sentence (or the one it points
    # back to) says one of the question's words other than the names it gives, unless
    # the item is a name or title itself.
    about = r.weigher.terms - r.weigher.names - r.speakers
    candidates: list[tuple[Said, str, int]] = []
    unasked: list[tuple[Said, str, int]] = []  # members whose sentence says no such word
    for s in r.at_least(LIST_SHARE):
        if asks(s.claim):
            continue  # a question asks for what it names, it tells no member (see asks)
        text = s.before if points_back(s.claim) else s.claim
        typed, level = _typed_item(r, text)
        if text is not s.claim:
            # "I made some peach cobbler recently, it was great": a sentence with a pointer
            # and few words of its own may still give the thing asked in its own clause,
            # which is what it tells; only a sentence that gives none speaks through the
            # one before it.
            own, own_level = _typed_item(r, s.claim)
            if own_level >= MEMBER:
                text, typed, level = s.claim, own, own_level
        # A name or a title is a thing of the kind asked in itself: "a short trip to Rome"
        # answers "which cities has Jon visited?" without the question's words.
        if level != NAMED and about and not set(analyze(text)) & about:
            if level >= MEMBER:
                unasked.append((s, typed, level))
            continue
        candidates.append((s, typed or r.novel(text, 3, whole_list=False), level))
    candidates += _named_below_bar(r, top) + _members_by_meaning(r, unasked)
    # Items are things of one kind: once a sentence gives what the question's grammar asks
    # for (its verb's object, a noun of the kind asked, a title, a name), the phrases taken
    # from sentences that give none are fragments, not items; once one names a member of
    # the class asked, a phrase naming the class itself ("fun activities") is none either
    # (names and other members alike are members).
    best_level = min(max((level for _s, _item, level in candidates), default=0), MEMBER)
    candidates = [c for c in candidates if c[2] >= best_level]
    candidates = _of_place_kind_asked(r, candidates)
    noun = stem_set(asked_noun(untimed(r.question)))
    if noun and any(_ends_in(item, noun) for _s, item, _level in candidates):
        # Members named with the noun asked ("the dog shelter" for "what shelters"): a
        # person's name said elsewhere is of another kind (who was met there).
        candidates = [
            (s, item, level)
            for s, item, level in candidates
            if level != NAMED or _ends_in(item, noun) or item in quoted_titles(s.claim)
        ]
    candidates = _of_class_asked(r, candidates)
    candidates = _without_unnamed_members(candidates, noun)
    candidates = _without_modifiers(candidates, noun)
    for s, said, _typed in candidates:
        # A dash ends the item: what follows is said of it ("piano - it's a learning curve").
        item = _without_clause_adverbs(_DASH.split(said, 1)[0])
        key = stem_set(item) - r.weigher.terms
        where = s.session or s.item.page_id if per_session else ""
        if not key or any(key & k for w, k in seen if w == where):
            continue
        seen.append((where, key))
        items.append(item)
        sources.append(s)
        if len(items) == MAX_ITEMS:
            break
    return items, sources


def _of_place_kind_asked(
    r: Ranking, candidates: list[tuple[Said, str, int]]
) -> list[tuple[Said, str, int]]:
    """Asked "which cities/countries/states", once an item is a name the gazetteer knows as
    a place of that kind, an item that names none ("must-visit city", which says only that
    there is one) or names a place of another kind is no member: the question names the
    kind of its members. A name the gazetteer does not know (a small town) stays."""
    kind = PLURAL_KINDS.get(asked_noun(untimed(r.question)).lower(), "")
    if not kind or not any(kind in kind_of(item) for _s, item, _level in candidates):
        return candidates
    return [
        (s, item, level)
        for s, item, level in candidates
        if kind in kind_of(item) or (re.search(r"\b[A-Z]", item) and not kind_of(item))
    ]


def _without_unnamed_members(
    candidates: list[tuple[Said, str, int]], noun: frozenset[str]
) -> list[tuple[Said, str, int]]:
    """``candidates`` without the items that are the noun asked with only words that say
    no more than that there is one ("another movie", "a new recipe" for "what movies …?",
    "what recipes …?"): they say a member exists but not which, which the question asks;
    kept when nothing else is found."""
    if not noun:
        return candidates

    def unnamed(item: str) -> bool:
        words = [w.lower() for w in re.findall(r"[\w'’-]+", item)]
        if words and stem_set(words[-1]) == noun:
            words = words[:-1]
        # "the whole collection" for "what does X collect?": the verb's noun form with
        # such words only leaves them, which name nothing either.
        return set(words) <= UNSPECIFIC

    kept = [c for c in candidates if not unnamed(c[1])]
    return kept or candidates


def _without_modifiers(
    candidates: list[tuple[Said, str, int]], noun: frozenset[str]
) -> list[tuple[Said, str, int]]:
    """``candidates`` without the items that end in the noun asked where their sentence
    goes on with another noun that closes the phrase ("my first video game tournament last
    week", "two nintendo game covers with a picture" for "what video games …?"): the noun
    asked modifies that noun, and the thing told is a tournament or a cover, no member of
    the class asked. Kept when nothing else is found."""
    if not noun:
        return candidates
    kept = [
        c for c in candidates if not (_ends_in(c[1], noun) and _modifies_next(c[0].claim, c[1]))
    ]
    return kept or candidates


# A word after an item that closes its clause or says when or where, not a noun the item
# modifies ("a game tonight", "played chess online").
_NO_HEAD = frozenset("online offline home outside inside alone everyday daily weekly".split())
_PHRASE_END = re.compile(r"\s*(?:$|[.,!?;:)\]]|[-–—]\s|\s+[a-z]+\b)")


def _modifies_next(text: str, item: str) -> bool:
    """Whether ``item`` is said in ``text`` right before a lowercase noun that ends the
    phrase: a word that is no function word, adverb or time word, followed by the
    sentence's end, a punctuation mark, or a preposition or time word (see
    _without_modifiers). A noun right before another noun in English modifies it."""
    at = text.find(item)
    if at < 0 or not item or not item[-1].isalpha():
        return False
    following = re.match(r"\s+([a-z][\w'’-]*)", text[at + len(item) :])
    if not following:
        return False
    word = following.group(1)
    if (
        word in STOP | PREPOSITIONS | PHRASE_EDGE | _CLAUSE_ADVERBS | _NO_HEAD
        or word.endswith(("ly", "ing", "ed"))
        or TIME_WORD.match(word)
    ):
        return False
    rest = text[at + len(item) + following.end() :]
    end = _PHRASE_END.match(rest)
    if not end:
        return False
    after = end.group(0).strip()
    return not after[:1].isalpha() or after in PREPOSITIONS or bool(TIME_WORD.match(after))


# Adverbs that close a clause after its object ("I play the violin now", "been playing it
# nonstop", "tried sushi again", "played some Chess afterward") and never end a noun
# phrase: no word of the thing named.
_CLAUSE_ADVERBS = frozenset(
    "now again too anymore nonstop already instead either though yet lately afterward "
    "afterwards later together".split()
)


def _without_clause_adverbs(item: str) -> str:
    """``item`` without the adverbs of its clause after its last noun (_CLAUSE_ADVERBS)."""
    words = item.split()
    while len(words) > 1 and words[-1].lower().strip(".,!?") in _CLAUSE_ADVERBS:
        words.pop()
    return " ".join(words)


# A list item far in meaning from the class asked: nearer than CLASS_NEAR, or than
# CLASS_SHARE of the nearest item, keeps it (see _of_class_asked).
CLASS_NEAR = 0.3
CLASS_SHARE = 0.6
_ITEM_CUT = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?")


def _of_class_asked(
    r: Ranking, candidates: list[tuple[Said, str, int]]
) -> list[tuple[Said, str, int]]:
    """``candidates`` (sentence, item, level) without the items far in meaning from the
    class the question asks the members of ("what instruments": "clarinet" stays, "water"
    and "games" go): grammar finds a verb's object or a noun phrase, not whether it is of
    the kind asked. An item goes only when it is far from the class in itself and far
    below the nearest item, so a class the model reads poorly ("activities") loses none;
    a quoted title is kept, since its words do not say what it names, and so are the
    phrases of sentences that give nothing typed."""
    kind = asked_class(untimed(r.question))
    parts = [_ITEM_CUT.split(_DASH.split(item, 1)[0]) for _s, item, _level in candidates]
    phrases = [p for ps in parts for p in ps if p]
    if not kind or not phrases:
        return candidates
    near = dict(zip(phrases, nearness(kind, phrases), strict=True))
    bar = min(CLASS_NEAR, CLASS_SHARE * max(near.values()))
    far_titles = _titles_far_from_class(kind, candidates)
    kept: list[tuple[Said, str, int]] = []
    for (s, item, level), ps in zip(candidates, parts, strict=True):
        if (s.claim, item) in far_titles:
            continue
        if (
            level == UNTYPED
            or item in quoted_titles(s.claim)
            or _named_of_class(r, s, item)
            # What the asked person tells they joined or attended is what they took part
            # in, which the question asks, whatever the model reads its words as.
            or item == _joined_object(r, s.claim, r.weigher.terms | r.weigher.names)
        ):
            kept.append((s, item, level))
            continue
        # An item that holds a list ("hikes, hanging, picnics") is judged item by item.
        near_enough = [p for p in ps if p and near[p] >= bar]
        if near_enough:
            kept.append((s, ", ".join(near_enough), level))
    return kept


def _titles_far_from_class(
    kind: str, candidates: list[tuple[Said, str, int]]
) -> set[tuple[str, str]]:
    """The (sentence, title) pairs of the quoted titles among ``candidates`` whose
    sentence, the title left out, is far in meaning from the class asked ``kind``: nearer
    than CLASS_NEAR to it keeps a title, and so does CLASS_SHARE of the nearest title
    sentence's nearness. A title's words do not say what it names, but its sentence does
    ("I saw a movie … I think it was called "Inception"" names a movie, no video game), so
    titles are judged by their sentences, against each other; a lone title is kept."""
    titled = [(s.claim, item) for s, item, _level in candidates if item in quoted_titles(s.claim)]
    if len(titled) < 2:
        return set()
    rests = [claim.replace(item, "") for claim, item in titled]
    near = nearness(kind, rests)
    bar = min(CLASS_NEAR, CLASS_SHARE * max(near))
    return {pair for pair, v in zip(titled, near, strict=True) if v < bar}


def _named_of_class(r: Ranking, s: Said, item: str) -> bool:
    """Whether ``item`` is the name ``s`` gives right after the noun the question asks
    about ("this game Ludo"): the sentence says it is of the class, which the model
    cannot tell from a name (see _name_of_class_object)."""
    noun = asked_noun(untimed(r.question))
    if not noun or not item[:1].isupper():
        return False
    stems = stem_set(noun)
    # Right after the noun, or after a verb of naming: a name set off by a comma names
    # something else ("a resident at the shelter, Marta").
    for found in re.finditer(r"([\w'’-]+)\s+(?:(?:called|named|titled)\s+)?[\"“]?", s.claim):
        if stem_set(found.group(1)) == stems and s.claim[found.end() :].startswith(item):
            return True
    return False


# A name from a sentence below the list's bar, down to NAMED_FLOOR of the best sentence's
# score, joins the list when it is this near in meaning to the class asked; so does a
# member from a sentence that says none of the question's words (_members_by_meaning).
NAMED_FLOOR = 0.4
NAMED_NEAR = 0.5


def _named_below_bar(r: Ranking, top: float) -> list[tuple[Said, str, int]]:
    """The names of things of the class asked (see asked_class) that sentences scoring
    between NAMED_FLOOR and LIST_SHARE of the best one give ("a road trip to Oregon" for
    "what states …?"). A list gathers across sessions, and a sentence that names one
    member says little else of the question; a name the model reads as a member of the
    class asked is as sure an item as one from a sentence above the bar. First names and
    titles, which the model cannot place, never come near."""
    kind = asked_class(untimed(r.question))
    if not kind:
        return []
    found: list[tuple[Said, str, int]] = []
    done: list[tuple[Said, str, int]] = []  # names the question's verb is done to
    for score, _share, s in r.ranked:
        if score >= LIST_SHARE * top:
            continue
        if score < NAMED_FLOOR * top:
            break
        text = s.before if points_back(s.claim) else s.claim
        item, level = _typed_item(r, text)
        if level == NAMED and item not in quoted_titles(s.claim):
            found.append((s, item, level))
        elif level >= MEMBER and _tells_own(r, s, text) and _named_object(r, text) == item:
            done.append((s, item, level))
    found += _named_by_the_asked(r, NAMED_FLOOR * top)
    names = list(dict.fromkeys(item for _s, item, _level in found))
    near = dict(zip(names, nearness(kind, names), strict=True))
    return [named for named in found if near[named[1]] >= NAMED_NEAR] + done


def _tells_own(r: Ranking, s: Said, text: str) -> bool:
    """Whether ``s`` is the person the question asks about telling what they did
    themselves ("I'm playing …", "we played …"): said by them (when the question names a
    speaker), in the first person, and asking nothing. "Have you read all of …" asks the
    other what they did."""
    if asks(s.claim) or not _FIRST_PERSON.search(text):
        return False
    return not r.asked_speakers or set(analyze(s.speaker)) <= r.asked_speakers


_FIRST_PERSON = re.compile(r"\b(?:I|[Ww]e)\b")


def _named_object(r: Ranking, text: str) -> str:
    """The name or title ``text`` gives as the object of the verb the question asks about
    ("I'm playing this fantasy RPG called "Xenoblade Chronicles"", "I play CS:GO" for
    "what video games does Nate play?"); "" when the object is no name. The question's
    verb done to a named thing tells that thing as one asked for, whatever words the
    sentence shares with the question."""
    asked = r.weigher.terms | r.weigher.names
    found = done_object(untimed(r.question), text, asked)
    if not found:
        return _title_after_verb(r, text)
    named = _name_called(text, found)
    if named:
        return named
    return found if found[:1].isupper() and found not in r.speakers else ""


# A word, then a title in quotes right after it ("played "Moon Keep"").
_BEFORE_TITLE = re.compile(r"([\w'’-]+)\s+[\"“]([^\"”]+)[\"”]")


def _title_after_verb(r: Ranking, text: str) -> str:
    """The title in quotes ``text`` says right after a form of the question's verb ("I
    played "Moon Keep" last year" for "what games has X played?"): the title is the
    verb's object, which the object reader does not read across a quote."""
    verb = asked_verb(untimed(r.question))
    if not verb:
        return ""
    for found in _BEFORE_TITLE.finditer(text):
        if set(analyze(found.group(1))) == verb:
            return found.group(2).strip().rstrip(".,!?")
    return ""


# A word capitalised after a sentence's first: a name the sentence may give.
_CAPITALISED = re.compile(r"(?<=\S)\s+[\"'“‘]?[A-Z][a-z]")


def _named_by_the_asked(r: Ranking, floor: float) -> list[tuple[Said, str, int]]:
    """The names that the person the question asks about says in the sentences ranked
    under ``floor`` or left out (too few of the question's words: "I took this pic in
    Spain" for "What European countries has Maria been to?"), to be kept by meaning as
    those below the bar are. A list gathers across sessions, and a member named in passing
    in the asked person's own words is told of them whatever else its sentence says."""
    asked = r.asked_speakers
    if not asked:
        return []
    ranked = {id(s) for score, _share, s in r.ranked if score >= floor}
    found: list[tuple[Said, str, int]] = []
    for s in r.all:
        if id(s) in ranked or not set(analyze(s.speaker)) <= asked or asks(s.text):
            continue
        text = s.claim or s.text
        if not _CAPITALISED.search(text):
            continue  # no name inside it (one that opens it is rarely known as a name)
        item, level = _typed_item(r, text)
        if level == NAMED and item not in quoted_titles(text):
            found.append((s, item, level))
    return found


def _members_by_meaning(
    r: Ranking, unasked: list[tuple[Said, str, int]]
) -> list[tuple[Said, str, int]]:
    """Of the members found in sentences that say none of the question's words but names
    (``unasked``: "We love going for hikes and having picnics" for "what activities does
    the family enjoy?"), those the embedder reads as near the class asked (NAMED_NEAR):
    what the sentence names is then of what is asked, though it does not say so."""
    kind = asked_class(untimed(r.question))
    if not kind:
        return []
    near = nearness(kind, [item for _s, item, _level in unasked])
    return [member for member, v in zip(unasked, near, strict=True) if v >= NAMED_NEAR]


def asked_class(question: str) -> str:
    """The class a "what Ns …?" question asks the members of, with the words that qualify
    it ("European countries", "events for veterans"); "" when the question names none
    ("What does X do …?")."""
    found = ASKED_NOUN.match(question.strip())
    if not found or not asked_noun(question):
        return ""
    words = found.group(1).split()
    if words[0].lower() in _AUXILIARIES:
        return ""
    return " ".join(words)


_AUXILIARIES = frozenset("is are was were do does did has have had can could would will".split())


def _ends_in(phrase: str, stems: frozenset[str]) -> bool:
    """Whether ``phrase``'s last word is of ``stems`` (its head noun is the one asked)."""
    words = re.findall(r"[\w'’-]+", phrase)
    return bool(words) and stem_set(words[-1]) == stems


_DASH = re.compile(r"\s+[-–—]+(?:\s+|$)|\s*[–—]\s*")


# How surely an item is one of the things a list question asks for (_typed_item): none
# of the kind asked, a phrase naming their class, a member of it, a member by its name or
# title.
UNTYPED, CLASS, MEMBER, NAMED = 0, 1, 2, 3


def _typed_item(r: Ranking, text: str) -> tuple[str, int]:
    """What ``text`` gives of the kind a list question asks for: the object of its verb,
    the noun phrase of the noun it asks about ("what instruments": "a bass guitar"), a
    title in quotes, or a name; else a phrase naming the class asked (see _names_class);
    "" if none. With how surely it is one (NAMED, MEMBER, CLASS, UNTYPED)."""
    asked = r.weigher.terms | r.weigher.names
    noun = asked_noun(untimed(r.question))
    grouped = ""
    found = done_object(untimed(r.question), text, asked)
    if found and not _names_class(found, noun):
        name = _name_called(text, found) or _name_of_class_object(text, found, noun, asked)
        if name:
            return name, MEMBER
        return found, MEMBER
    grouped = found
    # Asked what someone took part in, what they joined or attended, by any verb of it.
    joined = _joined_object(r, text, asked)
    if joined and not _names_class(joined, noun):
        return joined, MEMBER
    if noun:
        found = noun_phrase(text, noun, asked)
        if found and not _names_class(found, noun):
            return found, MEMBER
        grouped = grouped or found
    if asks_doing(r.question) or _is_activity(noun):
        # "What does X do …?": the things done are activities, named by their -ing form.
        doing = _gerunds(text, asked, with_object=asks_doing(r.question))
        if doing:
            return ", ".join(doing), MEMBER
    title = quoted_title(text, asked)
    if title:
        return title, NAMED
    named = [n for n in map(_untimed_name, people(text, asked | r.speakers, r.known)) if n]
    if named:
        return named[0], NAMED
    return (grouped, CLASS) if grouped else ("", UNTYPED)


def _name_of_class_object(text: str, found: str, noun: str, asked: set[str]) -> str:
    """The name ``text`` gives the thing that the verb's object ``found`` calls only by
    the noun the question asks about ("We played this game Ludo", "playing a game nonstop
    … called "Skyward"" for "what games …?"): the object says that it is one of the
    class, the name says which one, and the question asks which. The name right after the
    noun (see noun_phrase), else a title in quotes; "" when the object names the member
    itself ("I play chess") or the sentence gives no name."""
    stems = stem_set(noun) if noun else frozenset()
    if not stems or not any(stem_set(w) == stems for w in re.findall(r"[\w'’-]+", found)):
        return ""
    named = noun_phrase(text, noun, asked)
    if named and named[0].isupper():
        return named
    return quoted_title(text, asked)


# The object of a verb cut before the name it is given: "a fantasy novel called", with the
# name said next ("called "The Name of the Wind"", "named Max").
_CALLED = re.compile(r"\b(?:called|named|titled)$", re.I)
_NAME_NEXT = re.compile(r"\s*(?:[\"“]([^\"”]+)[\"”]|([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*))")


def _name_called(text: str, found: str) -> str:
    """The name that ``text`` gives the verb's object ``found`` when the object ends in a
    verb of naming ("reading a fantasy novel called "The Name of the Wind""): the words
    before it say only what kind of thing it is, the name says which one, and "called X"
    is how people name the thing they speak of, whatever its kind. "" when ``found`` does
    not end so or no name or title follows."""
    if not _CALLED.search(found):
        return ""
    at = text.find(found)
    named = _NAME_NEXT.match(text, at + len(found)) if at >= 0 else None
    if not named:
        return ""
    return (named.group(1) or named.group(2)).strip().rstrip(".,!?")


def _is_activity(noun: str) -> bool:
    return noun.lower() in ("activity", "activities")


def _gerunds(text: str, asked: set[str], with_object: bool = False) -> list[str]:
    """Every activity ``text`` names by an -ing form (see gerund), in its order; with
    ``with_object``, each with the object it takes (see _object_of_doing)."""
    found: list[str] = []
    # A picture's caption describes the scene shown ("a person holding a frisbee"): its
    # -ing forms say what someone in it is doing at that instant, no activity told of.
    rest = _CAPTION.sub("", text)
    while True:
        doing = gerund(rest, asked)
        if not doing:
            return found
        at = rest.find(doing.split()[-1])
        after = rest[at + len(doing.split()[-1]) :]
        if not _no_activity(rest[:at], doing.split()[-1], after):
            done = _object_of_doing(after) if with_object else ""
            found.append(_without_catenative(doing) + (f" {done}" if done else ""))
            if done:
                # The object's words are no activity of their own ("my shooting accuracy").
                after = after[after.find(done) + len(done) :]
        rest = after


# What opens the noun phrase a verb takes as its object: a determiner, a possessive, a
# quantifier ("reading a great fantasy book", "writing some of my favorite memories").
_OBJECT_OPENERS = frozenset(
    "a an the this that these those my your his her its our their some any each every "
    "another all both many few several".split()
)
_OBJECT_PRONOUNS = frozenset("me us him them".split())
_QUANTIFIERS = frozenset("some any each all both many few several".split())
OBJECT_WORDS = 5


def _object_of_doing(after: str) -> str:
    """The noun phrase right after an -ing form, opened by a determiner or a possessive
    (_OBJECT_OPENERS), to the first preposition, clause word, pronoun or punctuation mark:
    asked what someone does ("to escape reality", "with their turtles"), the activity is
    the verb with what it is done to ("reading a great fantasy book"), which the -ing form
    alone does not say. "" when no such phrase follows (a preposition, an adverb: "running
    farther", "hiking in the mountains")."""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", after)
    if not tokens or tokens[0].lower() not in _OBJECT_OPENERS:
        return ""
    words = [tokens[0]]
    for n, token in enumerate(tokens[1:], 1):
        low = token.lower()
        if low == "of" and tokens[n - 1].lower() in _QUANTIFIERS:
            words.append(token)  # "some of my favorite memories": the quantity of a noun
            continue
        if (
            not re.match(r"[\w'’-]+$", token)
            or low in PREPOSITIONS | CLAUSE_LINKS | SUBJECT_WORDS
            or TIME_WORD.match(low)
            or len(words) > OBJECT_WORDS
            or (n + 1 < len(tokens) and tokens[n + 1].lower() in _OBJECT_PRONOUNS)
        ):
            # A word followed by an object pronoun is a verb ("… book helps me escape"):
            # the -ing phrase was its subject, and the object ends before it.
            break
        words.append(token)
    words = trim_end(trim_end(words), _OBJECT_OPENERS | {"of"})
    return " ".join(words)


# Verbs that take an -ing form as their object ("I enjoy hiking", "we go camping", "keep
# running"): before one, they are the clause's verb, no word that says which activity.
_CATENATIVES = frozenset(
    "enjoy enjoys love loves like likes hate hates prefer prefers start starts keep keeps "
    "kept stop stops quit go goes went try tries miss misses avoid avoids finish finishes "
    "begin begins began continue continues practice practise mind".split()
)


def _without_catenative(doing: str) -> str:
    """``doing`` without a verb that takes it as its object (_CATENATIVES)."""
    words = doing.split()
    return words[-1] if len(words) == 2 and words[0].lower() in _CATENATIVES else doing


# Verbs of liking: their -ing form says how one feels about what follows it ("I'm loving
# sharing my skills", "enjoying the hikes"), which is the activity, not the liking.
_LIKING = frozenset("loving enjoying liking hating adoring".split())


def _no_activity(before: str, ing: str, after: str) -> bool:
    """Whether the -ing form ``ing`` between ``before`` and ``after`` names no activity:
    a verb of liking (_LIKING), or a noun after "a"/"an" that ends its phrase ("such a
    blessing.", "a wedding, then"): an activity is named by a verb's form, and an
    indefinite article with nothing after the word makes it a thing."""
    if ing.lower() in _LIKING:
        return True
    last = before.split()[-1:] if before.split() else []
    return bool(last) and last[0].lower() in ("a", "an") and not re.match(r"\s*[A-Za-z]", after)


_CAPTION = re.compile(r"\\?\[shares an image:[^\]]*\]?")


# Words that open a phrase before a name and are no part of it: prepositions, those that
# begin a phrase of time ("During Thanksgiving", "After Easter") and coordinators ("And
# Paris"). "No" may open a title ("No Man's Sky").
_OPENERS = PREPOSITIONS | (PHRASE_EDGE - UNSPECIFIC - {"no"})


def _untimed_name(name: str) -> str:
    """``name`` without the time words and prepositions a sentence capitalised before it
    ("Last Monday", "During Thanksgiving": Thanksgiving); "" when it names a time."""
    words = name.split()
    while words and (TIME_WORD.match(words[0]) or words[0].lower() in _OPENERS | CALENDAR):
        words.pop(0)
    return " ".join(words) if words and words[0][0].isupper() else ""


def _names_class(phrase: str, noun: str) -> bool:
    """Whether ``phrase`` names the plural class a list question asks the members of
    ("favorite cities", "fun activities" for "which cities …", "what activities …"): it
    says the asked noun in the plural, as the question does. A member is one thing, named
    in the singular ("a live music event") or by its name."""
    return _is_plural(noun.lower()) and noun.lower() in phrase.lower().split()


def _is_plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith("ss")


# Verbs that tell taking part in something as done or as a habit, each with the word that
# links its object: "joined a mentorship program", "went to an LGBTQ conference", "took part
# in a march", "took up some community work". Their -ing forms and "going to" are left out:
# "I'm going to a conference next month" tells a plan, which is no part taken yet.
_JOINING = re.compile(
    r"\b(?:join(?:ed|s)?|attend(?:ed|s)?|went\s+to|participated\s+in|"
    r"(?:took|take|takes)\s+(?:part\s+in|up))\s+(?=(?:a|an|the|my|our|this|that|some)\b)",
    re.I,
)
# The question's verbs that ask what someone took part in.
_TAKING_PART = frozenset(analyze("participate attend join do done"))


def _joined_object(r: Ranking, text: str, asked: set[str]) -> str:
    """Asked what someone took part in ("What events has X participated in?", "attended",
    "done"), the thing ``text`` tells, in the first person, was joined, gone to, attended or
    taken up ("Last weekend I joined a mentorship program"): English tells taking part in
    an event or an activity by any of these verbs, and the question's own verb is only one of
    them. "" when the question's verb is of another kind or ``text`` tells no such thing."""
    verb = asked_verb(untimed(r.question))
    if not any(same_stem(verb, {part}) for part in _TAKING_PART):
        return ""
    if not _FIRST_PERSON.search(text):
        return ""
    for found in _JOINING.finditer(text):
        tokens = re.findall(r"[\w'’-]+|[^\w\s]", text[found.end() :])
        phrase = object_after(tokens, 0, asked, gerund=False)
        if phrase and not SUBJECT_WORDS & {w.lower() for w in phrase.split()}:
            return phrase
    return ""
