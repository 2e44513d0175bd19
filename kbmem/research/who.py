"""The answer to "who" (kbmem.research.extract): ``person``, a name the best sentences give
(not the question's own), the name said to be what is asked ("X will be our first pilot
customer"), the speaker saying in the first person the verb asked ("I own the sync
service"), someone said by relation ("my aunt"); asked "who is <name>?", what memory says
they are (a role, a phrase beside the name, a relation, what they do); and ``names``, the
names gathered from the sentences that answer nearly as well as the best one."""

from __future__ import annotations

import itertools
import re

from kbmem.index.tenant import analyze
from kbmem.research.extract import Extracted, gathered, named_elsewhere
from kbmem.research.grammar import REASON_WORDS
from kbmem.research.joint import shared_item, shared_named
from kbmem.research.kin import kin
from kbmem.research.phrases import named_as
from kbmem.research.ranking import Ranking
from kbmem.research.said import CIVILITIES, STOP
from kbmem.research.spans import people, quoted_titles
from kbmem.research.types import Said


def person(r: Ranking) -> Extracted:
    described = _described(r)
    if described:
        return described  # "Who is Femi Adeyemi?": what memory says she is
    possessor = _possessor_of_asked(r)
    if possessor:
        return possessor  # "Whose birthday ...?": "my daughter's birthday"
    exclude = r.weigher.names

    def names_in(s: Said) -> list[str]:
        return people(s.claim or s.text, exclude | r.speakers, r.known)

    # A name of the class asked first: one both merely mention (a friend) is of no class.
    shared = shared_named(r, names_in) or shared_item(r, names_in)
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
    if _WHO_IS.match(r.question):
        # "Who is the first pilot customer?" — "Skerrick Island Ferries will be our first
        # pilot customer": the name said to be what is asked, not another name beside it.
        name = named_as(best.claim, r.weigher.terms, exclude | r.speakers)
        if name:
            return name, [best]
    doer = _doer_of_asked(r)
    if doer:
        return doer
    for s in r.close_to_best("person"):
        found = _not_asked_of(people(s.claim, exclude, r.known), r)
        # The listener called by name ("It was so inspiring, Mel!") is spoken to, not
        # spoken of: the sentence tells nothing they did.
        found = [n for n in found if n not in addressed(s.claim)]
        if found:
            return r.nearest(s.claim, found), [s]
    # No name: a person said by relation, the subject a sentence opens with ("My aunt
    # believed in volunteering": the speaker's aunt).
    for s in r.near():
        relation = _RELATION.match(s.claim)
        if relation and not set(analyze(relation.group(2))) & r.weigher.terms:
            named = named_elsewhere(r, s, relation.group(2))
            if named:
                return named
            whose = relation.group(1)
            owner = f"{s.speaker}'s" if whose.lower() in ("my", "our") else whose
            return f"{owner} {relation.group(2)}".strip(), [s]
    partner = _partner_of_asked(r)
    if partner:
        return partner
    # "Who ...?" answered in the first person: the speaker is the person.
    for s in r.near():
        if re.match(r"(?:I|I'm|I've|We)\b", s.claim) and not set(analyze(s.speaker)) & exclude:
            return s.speaker, [s]
    return "", [r.best()]


def nickname(r: Ranking) -> Extracted | None:
    """Asked what nickname one person uses for another ("What nickname does Nate use for
    Joanna?"), the name the first calls the second by when speaking to them (a vocative,
    ``addressed``) that is a short form of the second's name ("Jo" of "Joanna"): a
    nickname is most often the name cut short, and it shows where the speaker addresses
    them. The most used of them; None when the question is another or no such name is
    said."""
    asked = _NICKNAME.search(r.question)
    if not asked:
        return None
    caller, callee = asked.group(1).lower(), asked.group(2).lower()
    uses: dict[str, list[Said]] = {}
    for s in r.all:
        if not s.speaker or s.speaker.split()[0].lower() != caller:
            continue  # what others call them is not the caller's name for them
        # Every sentence the caller said, ranked or not: a vocative holds none of the
        # question's terms, so its sentence may not have been scored (claim unset).
        for name in addressed(s.claim or s.text):
            if callee.startswith(name.lower()) and name.lower() != callee:
                uses.setdefault(name, []).append(s)
    if not uses:
        return None
    name = max(uses, key=lambda n: len(uses[n]))  # the first of equals
    return name, uses[name][:3]


_NICKNAME = re.compile(
    r"\bnick\s*name\b.*?\b(?:does|did|do)\s+([A-Z][a-z]+)\s+(?:use\s+)?(?:for|call)\s+([A-Z][a-z]+)"
)


def addressed(text: str) -> set[str]:
    """The names ``text`` calls its listener by (a vocative): a name alone after a comma
    that ends the sentence ("Thanks so much, Mel!"), or alone before a comma that opens it,
    after a greeting or not ("Jon, that looks great")."""
    out = set()
    end = re.search(r",\s*([A-Z][a-z]+)\s*[!?.]*\s*$", text)
    if end:
        out.add(end.group(1))
    start = re.match(rf"\s*(?:(?:{_GREETINGS})\b[\s,]*)?([A-Z][a-z]+)\s*,", text, re.I)
    if start and start.group(1)[0].isupper():
        out.add(start.group(1))
    return out - {w.capitalize() for w in _GREETINGS.split("|")}


_GREETINGS = "hey|hi|hello|oh|wow|thanks|yes|no|well|sure|aw|aww|ok|okay|congrats"


def _not_asked_of(found: list[str], r: Ranking) -> list[str]:
    """``found`` less the person the question names by a part of their name: asked "who is
    Femi's buddy?", "Femi Adeyemi" is whose buddy, not the buddy."""
    return [n for n in found if n.split()[0].lower() not in r.weigher.names]


def _doer_of_asked(r: Ranking) -> Extracted | None:
    """Asked "who <verb> …?", the subject of that verb in a sentence near the best: the name
    said just before it ("Maya Lindqvist owns the exporter"), the speaker saying it with "I"
    or "we" ("I own the sync service, …, and the Postgres migration" is Tobias's, not
    Postgres's), or, in a list of people whose
    entries go on without a subject ("**Ines Kovacic**, Designer. Owns Deckhand."), the
    name the entry opens with. A name said elsewhere in the sentence is most often the
    verb's object ("owns the relationship with Skerrick Island Ferries")."""
    found = _WHO_DOES.match(r.question)
    if not found or found.group(1).lower() in _NOT_DONE:
        return None
    verb = set(analyze(found.group(1)))
    for s in r.near(_DOER_LOOKS):
        text = s.claim or s.text
        for m in _SUBJECT_VERB.finditer(text):
            name = m.group(1)
            if (
                set(analyze(m.group(2))) & verb
                and name.split()[0].lower() not in STOP
                and not set(analyze(name)) & r.weigher.names
            ):
                return _named_in_full(name, r), [s]
        if (
            s.speaker
            and _says_in_first_person(text, verb)
            and not set(analyze(s.speaker)) & r.weigher.names
        ):
            return s.speaker, [s]
        # A sentence that opens with a verb ("Owns Deckhand", "Chairs planning, makes the
        # final call") has the subject of the one before.
        opener = re.match(r"([A-Z][a-z]+s)\b", text)
        if (
            opener
            and opener.group(1) not in r.known
            and any(set(analyze(w)) & verb for w in re.findall(r"[A-Za-z]+", text))
        ):
            entry = _entry_subject(s, r)
            if entry and not set(analyze(entry)) & r.weigher.names:
                return entry, [s]
    return None


_DOER_LOOKS = 5
# A name and the verb it is the subject of ("Oskar Brennan owns", "Femi quickly fixed").
_SUBJECT_VERB = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\s+(?:[a-z]+ly\s+)?([a-z]+)\b")
# The opening of an entry in a list of people: "**Maya Lindqvist**, Head of Engineering."
_ENTRY = re.compile(r"(?:^|(?<=[.!?]\s))\**([A-Z][a-z]+(?:\s+[A-Z][a-z]+)+)\**\s*,")
_ENTRY_SENTENCES = 4


def _entry_subject(s: Said, r: Ranking) -> str:
    """The name the entry ``s`` belongs to opens with, going back over its sentences that
    open with a verb and so go on about the same subject; "" when ``s`` is in no entry."""
    for _ in range(_ENTRY_SENTENCES):
        # The last entry opened before it: "… the Harbourmaster design. **Dara Whitcombe**,
        # Customer Success Lead." is read as one sentence when a bold name opens the next.
        entries = list(_ENTRY.finditer(s.before))
        if entries:
            return entries[-1].group(1)
        before = next(
            (p for p in r.all if p.item is s.item and p.text == s.before and p is not s),
            None,
        )
        if before is None or not re.match(r"[A-Z][a-z]+s\b", before.text):
            return ""
        s = before
    return ""


def _named_in_full(name: str, r: Ranking) -> str:
    """``name`` said as its speaker is named when it is their first name alone ("Oskar" is
    "Oskar Brennan" where he speaks): the name the reader knows them by."""
    if " " in name:
        return name
    full = {s.speaker for s in r.all if s.speaker.split()[:1] == [name]}
    return full.pop() if len(full) == 1 else name


_WHO_IS = re.compile(r"^\s*[Ww]ho\s+(?:is|was|will\s+be)\s+(?:the|our|their|his|her|my)\b")
# "Who is Femi Adeyemi?" asks what the named person is, not for another person.
_WHO_IS_NAMED = re.compile(
    r"^\s*[Ww]ho\s+(?:is|was|'s)\s+([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)\s*\??\s*$"
)
_DESCRIPTION_WORDS = 8
# Words that after "Name," open no description of the named: a vocative's request
# ("Femi, can you take it?"), a greeting, a reply.
_NOT_DESCRIBING = STOP | CIVILITIES | frozenset("please could let did you".split())


def _described(r: Ranking) -> Extracted | None:
    """Asked "who is <name>?", what a sentence says the named is: the phrase set beside the
    name ("Hire: Femi Adeyemi, senior backend engineer, accepted …"), said of it by "is"
    ("Femi is our new backend engineer") or the role it takes ("joins us as a senior
    backend engineer"); None when no sentence describes them."""
    found = _WHO_IS_NAMED.match(r.question)
    if not found:
        return None
    full = found.group(1).split()
    # Named in full or, among people who know them, by the first name ("Tobias, backend.").
    name = (
        "(?:"
        + r"\s+".join(map(re.escape, full))
        + (f"|{re.escape(full[0])}" if len(full) > 1 else "")
        + ")"
    )
    beside = re.compile(
        rf"\b{name}\**\s*(?:,\s*|\s+(?:is|was)\s+)((?:a|an|the|our|my|their|his|her)\s+)?"
        r"([\w'’-]+(?:\s+[\w'’-]+)*?)\s*(?=[,.;:()]|$)"
    )
    # "… Femi Adeyemi, who joins us today as a senior backend engineer": the role taken,
    # said of the named by "as" in the clause that names them.
    role = re.compile(
        rf"\b{name}\b[^.;:?!]*?\b(?:joins?|joined|joining|starts?|started|works?|worked|"
        r"serves?|served|comes?|came|hired)\b(?:\s+[\w'’-]+){0,3}?\s+as\s+"
        r"((?:a|an|the|our|their)\s+)([\w'’-]+(?:\s+[\w'’-]+)*?)"
        r"\s*(?=[,.;:()]|\s+(?:on|from|at|in|with|since|until|for|and|but|who|which)\b|$)"
    )
    found_beside = [
        (m, s)
        for _score, _share, s in r.ranked
        for m in itertools.chain(
            beside.finditer(s.claim or s.text), role.finditer(s.claim or s.text)
        )
        if _describes(m.group(2), r.known)
    ]
    # A sentence that opens with the name says what they are (a roster's or a glossary's
    # entry, "Femi is our new engineer"); one that names them further on, in passing
    # ("(front-end Maya Lindqvist, design Ines Kovacic)"), may set another's role beside it.
    leading = [(m, s) for m, s in found_beside if not (s.claim or s.text)[: m.start()].strip("* ")]
    for m, s in leading + found_beside:
        return f"{m.group(1) or ''}{m.group(2)}", [s]
    # Else whose relation they are ("my sister Niamh", "Dara's sister Niamh") or what they
    # do, said of them by name ("Tobias Ferrante owns the sync service, …").
    related = re.compile(
        rf"\b([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?['’]s|[Mm]y|[Oo]ur)\s+"
        rf"([a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+{name}\b"
    )
    doing = re.compile(
        rf"\b{name}\s+((?:[a-z]+s|[a-z]+ed)\b[^.;:?!()]*)",
    )
    for _score, _share, s in r.ranked:
        text = s.claim or s.text
        kin_of = related.search(text)
        if kin_of and kin_of.group(2).split()[0] not in _NOT_DESCRIBING:
            whose = kin_of.group(1)
            if whose.lower() in ("my", "our") and s.speaker:
                whose = f"{s.speaker}'s"
            return f"{whose} {kin_of.group(2)}", [s]
    for _score, _share, s in r.ranked:
        done = doing.search(s.claim or s.text)
        if done and done.group(1).split()[0] not in _NOT_DESCRIBING:
            return " ".join(done.group(1).split()[:REASON_WORDS]), [s]
    # No other person answers "who is X?": the best sentence's words, said weakly.
    return "", [r.best()]


def _describes(phrase: str, known: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether ``phrase``, set beside a name, says what the named is: not a vocative's
    request or a greeting ("Femi, can you take it?"), not a list of names (each word one of
    ``known`` or a conjunction: "Maya, Tobias and Oskar"; "Head of Engineering" is a title),
    and short."""
    words = phrase.split()
    return (
        bool(words)
        and re.split(r"['’]", words[0].lower())[0] not in _NOT_DESCRIBING
        and not all(w in known or w in ("and", "or", "&") for w in words)
        and len(words) <= _DESCRIPTION_WORDS
    )


# "What is FL-212?", "What is Harbourmaster?": what a name or a code names.
_WHAT_IS_NAMED = re.compile(
    r"^\s*[Ww]hat\s+(?:is|was|'s)\s+(?:the\s+)?((?:[A-Z]|[\w-]*\d)[\w'’-]*(?:\s+[A-Z][\w'’-]*)*)\s*\??\s*$"
)


def defined(r: Ranking) -> Extracted | None:
    """Asked "what is <name>?", what a sentence says the named thing is: the gloss set in
    brackets or after a colon ("ticket FL-212 (cross-tablet duplicate boarding passes)"),
    or a phrase with its article set beside it or said of it by "is" ("Deckhand, the
    Android crew app", "Deckhand is the app the crew use"); None when none does. A phrase
    without an article after the comma tells of the named more than it says what it is
    ("FL-212, fixed by Femi").
    """
    found = _WHAT_IS_NAMED.match(r.question)
    if not found:
        return None
    name = r"\s+".join(map(re.escape, found.group(1).split()))
    glossed = re.compile(
        rf"(?<![\w-]){name}\**\s*(?:\(|:\s+)(?:(a|an|the)\s+)?([^()]+?)\s*(?=[),.;:]|$)"
    )
    beside = re.compile(
        rf"(?<![\w-]){name}\**\s*(?:,\s*|\s+(?:is|was)\s+)(a|an|the)\s+"
        r"([\w'’-]+(?:\s+[\w'’-]+)*?)\s*(?=[,.;:()]|$)"
    )
    for _score, _share, s in r.ranked:
        text = s.claim or s.text
        for m in itertools.chain(glossed.finditer(text), beside.finditer(text)):
            if _describes(m.group(2)):  # (after an article, no list of names)
                article = f"{m.group(1)} " if m.group(1) else ""
                return f"{article}{m.group(2)}", [s]
    return None


# "Who owns …?", "Who has led …?": who is the subject of the verb asked; "Who did X
# meet?" asks the verb's object instead.
_WHO_DOES = re.compile(
    r"^\s*[Ww]ho\s+(?:(?:has|have|had|will|would|can|could|should)\s+)?([a-z][\w'’-]*)"
)
_NOT_DONE = frozenset("is are was were do does did be been being".split())


def _says_in_first_person(text: str, verb: set[str]) -> bool:
    """Whether ``text`` says ``verb`` (its stems) with "I" or "we" as its subject, within
    the two words after it ("I own", "we've been running")."""
    return any(
        set(analyze(w)) & verb
        for m in _FIRST_PERSON_VERB.finditer(text)
        for w in m.group(1).split()
    )


_FIRST_PERSON_VERB = re.compile(
    r"\b(?:I|[Ww]e)(?:'(?:ve|ll|m|re|d))?\s+((?:[\w'’-]+\s+){0,2}[\w'’-]+)"
)


_RELATION = re.compile(
    r"^\s*(my|our|his|her|their)\s+([a-z][\w'’-]*)\b(?!\s+(?:is|was|has)\b)", re.I
)


def names(r: Ranking) -> Extracted:
    """The names (not the question's own) that the sentences answering nearly as well as
    the best one give, gathered and deduplicated."""
    # The speakers are who talk, not whom they name.
    exclude = r.weigher.names | r.speakers
    return gathered(
        r,
        lambda s: untitled_people(s.claim, exclude, r.known),
        lambda name, found: name not in found,
    )


def untitled_people(text: str, exclude: set[str], known: frozenset[str]) -> list[str]:
    """The names ``text`` gives (spans.people) outside the titles it quotes: words in
    quotes are a work's title ("Charlotte's Web"), not whom it names."""
    titles = quoted_titles(text)
    return [n for n in people(text, exclude, known) if not any(n in t for t in titles)]


def _partner_of_asked(r: Ranking) -> Extracted | None:
    """Asked whom someone did a thing with ("Who did Ilse work with to ...?"), the object of
    "with" after that verb in a sentence near the best ("we worked with a local charity
    that ..."), a name or not: whoever one does a thing with is said by that "with", and a
    group or a relation ("a local charity", "my brother") answers as well as a name. The
    object ends where a clause or another preposition starts."""
    asked = _WITH_ASKED.match(r.question)
    if not asked:
        return None
    verb = set(analyze(asked.group(1)))
    for s in r.near():
        text = s.claim or s.text
        for m in _WITH_OBJECT.finditer(text):
            if not set(analyze(m.group(1))) & verb:
                continue
            words = m.group(2).split()
            if words[-1].lower() in STOP:
                continue  # "with the" cut short at a word that ends no phrase
            whose = words[0].lower()
            if whose in ("my", "our") and s.speaker:
                words = [f"{s.speaker.split()[0]}'s", *words[1:]]
            return " ".join(words), [s]
    return None


# "Who did Ilse work with ...?": the verb said just before "with".
_WITH_ASKED = re.compile(
    r"(?:who|whom)\s+(?:did|does|do|has|had|will|would)\s+.*?\b([a-z]+)\s+with\b", re.I
)
# "worked with a local charity that helps ...": the verb, and the phrase after "with" up to
# a relative word, another preposition, a conjunction or punctuation.
_WITH_OBJECT = re.compile(
    r"\b([a-z]+)\s+with\s+((?:(?!(?:that|who|which|whom|to|for|in|on|at|and|but|from|of|"
    r"about|when|while|because|so)\b)[A-Za-z'’-]+\s*){1,5})"
)


def _possessor_of_asked(r: Ranking) -> Extracted | None:
    """Asked "whose <noun> ...?", the possessor said before that noun in a sentence near the
    best ("We celebrated my daughter's birthday" is "Melanie's daughter"; "Tomas's bike" is
    Tomas): "whose" asks for the possessor, not for a name said beside the noun. "My" and
    "our" are the speaker's."""
    asked = _WHOSE.match(r.question)
    if not asked:
        return None
    noun = set(analyze(asked.group(1)))
    for s in r.near():
        text = s.claim or s.text
        for m in _POSSESSED.finditer(text):
            mine, named, held = m.group(1), m.group(2), m.group(3)
            if not set(analyze(m.group(4))) & noun:
                continue
            if mine and not s.speaker:
                continue
            owner = s.speaker.split()[0] if mine else named
            if owner.lower() in STOP:
                continue
            return (f"{owner}'s {held}" if held else owner), [s]
    return None


_WHOSE = re.compile(r"whose\s+([a-z]+)\b", re.I)
# "my daughter's birthday" (possessor "my", held "daughter", noun "birthday"), "my
# birthday", "Tomas's bike".
# A name owns only with its "'s": "Last birthday" names no owner.
_POSSESSED = re.compile(r"\b(?:((?i:my|our))|([A-Z][a-z]+)['’]s)\s+(?:([a-z]+)['’]s\s+)?([a-z]+)\b")
