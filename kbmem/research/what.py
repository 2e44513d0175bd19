"""The answer to "what" (kbmem.research.extract): ``thing``, what a "what" question asks,
taken by the question's form: a feeling, what befell someone, advice, the clause a verb of
knowing takes, what a shared picture shows, the noun phrase of the kind asked (or a title
the listener gave it), the noun the question equates its answer with, the reason asked
"why", the means or manner asked "how", the object the question's grammar asks for (of
the preposition it ends in, of its verb, the agent of a passive, what was given), else the
phrase of the best sentence that says most the question does not."""

from __future__ import annotations

import itertools
import re

from kbmem.index.late import FUNCTION_WORDS
from kbmem.index.tenant import analyze
from kbmem.research.extract import Extracted, named_elsewhere
from kbmem.research.grammar import (
    ASKED_NOUN,
    CLAUSE_CUT,
    PHRASE_EDGE,
    REASON_WORDS,
    SUBJECT_WORDS,
    asked_noun,
    trim_end,
    untimed,
)
from kbmem.research.how import ASKS_FEELING, described_state, enabler, felt, manner, regard, stirred
from kbmem.research.phrases import (
    OBJECT_WORDS,
    STRANDED_PREPOSITION,
    asked_verb,
    gerund,
    grammar_object,
    named_by,
    noun_phrase,
    object_after,
    same_stem,
    verb_object,
)
from kbmem.research.ranking import Ranking
from kbmem.research.said import STOP, points_back
from kbmem.research.shown import pointed, points_at, shown, split_caption
from kbmem.research.spans import (
    PREPOSITIONS,
    TIME_WORD,
    novel_phrase,
    quoted_title,
    quoted_titles,
    stem_set,
)
from kbmem.research.types import Said
from kbmem.research.which import named_after_bare, named_near, named_next, named_which
from kbmem.research.who import defined, nickname
from kbmem.research.why import implied_reason, purpose_of, reason_given


def _recalled(r: Ranking, noun: str) -> Extracted | None:
    """The title the listener gave the ``noun`` a top sentence recalls by what they did to
    it ("Been reading that book you recommended": the listener's "I loved 'Becoming
    Nicole' … Highly recommend it"): the title their sentence saying that verb gives, or
    the nearest one before it in its turn; None when no sentence near the best recalls one
    so."""
    recalls = re.compile(
        rf"\b(?:the|that|this|those)\s+{re.escape(noun)}s?\s+you\s+([a-z]+)\b", re.I
    )
    asked = r.weigher.terms | r.weigher.names
    # A recalling sentence says little of the question ("that book"), so any near the best.
    for s in r.near(len(r.ranked)):
        found = recalls.search(s.claim)
        if not found:
            continue
        verb = set(analyze(found.group(1)))
        for other in r.all:
            if other.speaker == s.speaker or not verb & set(analyze(other.text)):
                continue
            # "Highly recommend it!": what "it" is, its turn said before.
            turn = [
                o
                for o in r.all
                if o.item is other.item and (o.start, o.end) == (other.start, other.end)
            ]
            told = turn[: turn.index(other) + 1] if other in turn else [other]
            for said in reversed(told):
                title = quoted_title(said.text, asked)
                if title:
                    return title, [s, said]
    return None


def compound_kind(question: str) -> str:
    """The noun before the head of a compound a "what N …?" question asks about ("career"
    of "what career path"): the kind of thing the head is; "" if the noun is no compound."""
    found = ASKED_NOUN.match(question.strip())
    if not found:
        return ""
    said: list[str] = found.group(1).split()
    words = list(itertools.takewhile(lambda w: w.lower() not in PREPOSITIONS, said))
    # A name before the head ("AWS region", "Calloway account") says whose or which, not
    # what kind of thing the head is.
    if len(words) < 2 or words[-2].lower() in STOP | PHRASE_EDGE or not words[-2].islower():
        return ""
    return words[-2]


def taken_as(text: str, noun: str, asked: set[str]) -> str:
    """The phrase ``text`` takes as a ``noun`` ("looking into counseling and mental health
    as a career": "counseling and mental health"), back to the verb or preposition before
    it (at most OBJECT_WORDS words); "" if none says what the question (its terms
    ``asked``) does not."""
    stems = set(analyze(noun))
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n in range(2, len(tokens) - 1):
        if not (
            tokens[n].lower() == "as"
            and tokens[n + 1].lower() in ("a", "an")
            and n + 2 < len(tokens)
            and set(analyze(tokens[n + 2])) == stems
        ):
            continue
        start = n
        while (
            start > 0
            and n - start < OBJECT_WORDS
            and re.match(r"[\w'’-]+$", tokens[start - 1])
            and tokens[start - 1].lower() not in (STOP - {"and"}) | PREPOSITIONS | SUBJECT_WORDS
        ):
            start -= 1
        words = trim_end(tokens[start:n])
        while words and words[0].lower() == "and":
            words = words[1:]
        if words and set(analyze(" ".join(words))) - asked:
            return " ".join(words)
    return ""


# "What is X's favourite style of dance?", "What was the setback …?": a form of "be", then
# the noun phrase the answer is equated with; its head is the last word before the end of
# the question or the preposition or clause that qualifies it.
_EQUATED = re.compile(
    r"^\s*[Ww]hat\s+(?:is|was|are|were)\s+(?:one\s+of\s+)?"
    r"(?:[Tt]he|his|her|their|[\w'’-]+['’]s?)\s+((?:[a-z][\w'’-]*\s+){0,3}?)([a-z][\w'’-]*)"
    r"\s*(?:\?|$|\s+(?:of|for|from|in|on|at|to|about|towards?|with|that|behind|as)\b"
    r"|\s+(?=[A-Z]))"  # a clause whose subject is named: "the biggest challenge John faced"
)


def equated_noun(question: str) -> str:
    """The head of the noun phrase a "what is/was …?" question equates its answer with
    ("" if the question has another shape)."""
    found = _EQUATED.match(question)
    if (
        not found
        or found.group(2).lower() in STOP | FUNCTION_WORDS
        or STRANDED_PREPOSITION.search(question)
    ):
        return ""
    return found.group(2)


_COPULA_AFTER = re.compile(
    r"^\s+(?:is|was|are|were|has\s+been|have\s+been)\s+(?:(?:when|that|how)\s+)?([^.;!?]{2,})",
    re.I,
)
EQUATED_WORDS = 8
# "This necklace is a gift from my grandma", "This necklace is special - a gift from …": the
# subject a form of "be" (or a dash after its complement) equates with the noun that
# follows, after its determiner and modifiers.
_EQUATED_SUBJECT = re.compile(
    r"^(?:[\w'’-]+\s*,\s*)?(?:this|that|these|those|the|my|our|his|her|their)\s+"
    r"((?:[\w'’-]+\s+){0,2}?[\w'’-]+)\s+(?:is|was|are|were)\b(?:[^.;!?\-–—]*\s[-–—]\s*|\s+)"
    r"(?:a|an|the|my|our|his|her|their)\s+(?:[a-z][\w'’-]*\s+){0,2}$",
    re.I,
)


def equated(text: str, noun: str, asked: set[str]) -> str:
    """What ``text`` equates ``noun`` with: the name it is given or the phrase set beside it
    (see named_by), else the complement of the "be" that follows it ("my best memory was when
    we won the final": "we won the final"), at most EQUATED_WORDS words, to its clause's
    end; "" when none says what the question (its terms ``asked``) does not. Its modifiers
    are no answer: they are what the question says of it ("favourite")."""
    stems = set(analyze(noun))
    for found in re.finditer(r"[\w'’-]+", text):
        if not stems or set(analyze(found.group(0))) != stems:
            continue
        subject = _EQUATED_SUBJECT.search(text[: found.start()])
        if subject and set(analyze(subject.group(1))) - asked:
            return subject.group(1)
        rest = ("- " if found.group(0).endswith("-") else "") + text[found.end() :]
        named = named_by(rest, asked)
        if named:
            return named
        complement = _COPULA_AFTER.match(rest)
        if complement:
            clause = re.split(r"\s[-–—]\s|,", complement.group(1))[0]
            words = trim_end(clause.split()[:EQUATED_WORDS])
            if words and set(analyze(" ".join(words))) - asked:
                return " ".join(words)
    return ""


# "… but contemporary is my top pick": a clause that equates its subject with something of
# the speaker's answers "what is X's N?" in the speaker's words ("top pick" for
# "favourite style"), the subject being what the question asks for.
_OWNED_SUBJECT = re.compile(
    r"(?:^|[,;:]\s*|\s[-–—]\s*|\b(?=but|and|so))(?:(?:but|and|so)\s+)?"
    r"((?:the\s+)?[\w'’-]+(?:\s+[\w'’-]+){0,2}?)\s+(?:is|was|'s|’s)\s+(?:my|our)\s+"
    r"(?:[\w'’-]+\s*){1,3}(?:[.;!?,]|$)",
    re.I,
)


def owned_subject(text: str, asked: set[str]) -> str:
    """The subject ``text`` equates with something of the speaker's ("contemporary is my
    top pick": "contemporary"), asked "what is X's N?" where the sentence says N in other
    words; a pronoun is no answer, nor words the question (its terms ``asked``) says. ""
    if none."""
    for found in _OWNED_SUBJECT.finditer(text):
        subject = found.group(1)
        first = subject.split()[0].lower()
        if (first in STOP and first != "the") or not set(analyze(subject)) - asked:
            continue
        return subject
    return ""


# "What was the biggest challenge …?" asks for the one thing a superlative picks out; a
# sentence picks it out with a superlative of its own, equated with it by "be" ("… but the
# worst was self-doubt"), whatever the adjective. Words in -est that are no adjective's
# superlative ("interest", "honest", "rest") are set apart.
_NOT_SUPERLATIVE = (
    r"(?!(?:inter|for|hon|requ|gu|ch|qu|sugg|prot|harv|cont|conqu|inv|manif|dig|ar|b|n|p|r|t|v|w|z|"
    r"te|ze|ve|we|ne|pe|re)est\b)"
)
_SUPERLATIVE = (
    rf"(?:{_NOT_SUPERLATIVE}[a-z]{{2,}}est|best|worst|most\s+[a-z][\w'’-]*|least\s+[a-z][\w'’-]*)"
)
_ASKS_SUPERLATIVE = re.compile(rf"^\s*[Ww]hat\s+(?:is|was|are|were)\b.*\b{_SUPERLATIVE}\b")
_SAYS_SUPERLATIVE = re.compile(
    rf"\b(?:[Tt]he|[Mm]y|[Oo]ur)\s+{_SUPERLATIVE}(?:\s+[a-z][\w'’-]*)?\s+(?:is|was|were|are)\s+"
    r"([^.;!?,]{2,})"
)


def superlative(question: str, text: str, asked: set[str]) -> str:
    """What ``text`` equates a superlative with ("the worst was self-doubt": "self-doubt"),
    asked what a superlative picks out; "" when the question or ``text`` has no such
    shape, or the phrase says nothing the question (its terms ``asked``) does not."""
    if not _ASKS_SUPERLATIVE.match(question):
        return ""
    for found in _SAYS_SUPERLATIVE.finditer(text):
        words = trim_end(found.group(1).split()[:EQUATED_WORDS])
        if words and set(analyze(" ".join(words))) - asked:
            return " ".join(words)
    return ""


# "a safe, inviting place for people to grow": a short phrase of a preposition after the
# noun, closing its clause, says which one it is, as its modifiers do.
_NOUN_COMPLEMENT = re.compile(
    r"\s+((?:for|of|with|from|about)\s+[\w'’-]+(?:\s+[\w'’-]+){0,4}?)\s*(?:[.!?;,]|$)"
)


def with_complement(text: str, phrase: str) -> str:
    """``phrase`` (a noun phrase cut from ``text``) with the short prepositional phrase
    that follows it to its clause's end, when there is one (see _NOUN_COMPLEMENT)."""
    at = text.find(phrase)
    if not phrase or at < 0:
        return phrase
    found = _NOUN_COMPLEMENT.match(text, at + len(phrase))
    if not found or SUBJECT_WORDS & {w.lower() for w in found.group(1).split()}:
        return phrase
    return f"{phrase} {found.group(1)}"


# "What did X say about Y?", "What does X think of Y?": what is said of Y, which a sentence
# says by a linking verb after Y ("Creating a special experience is the key to …").
_SAY_ABOUT = re.compile(
    r"^\s*[Ww]hat\s+(?:does|did|do)\s+[A-Z][\w'’-]*\s+(?:say|think|believe|feel)"
    r"(?:\s+to\s+[A-Z][\w'’-]*)?\s+(?:about|of|regarding|on)\s+(.+?)\s*\?*\s*$"
)
_LINK = re.compile(
    r"\s(?:is|was|are|were|['’]s|sounds?(?:\s+like)?|seems?|looks?|feels?)\s+"
    r"(?:(?:so|really|very|such|just|truly|totally|definitely)\s+)*",
    re.I,
)
SAID_WORDS = 12


def said_about(question: str, text: str) -> str:
    """What ``text`` says of the topic a "what did X say about Y?" question names: the
    complement of the first linking verb after a word of Y, to its clause's end (at most
    SAID_WORDS words); "" when the question has another shape or ``text`` links none."""
    found = _SAY_ABOUT.match(question)
    if not found:
        return ""
    topic = stem_set(found.group(1)) - STOP
    for link in _LINK.finditer(text):
        if not stem_set(text[: link.start()]) & topic:
            continue
        clause = re.split(r"[.;!?]|\s[-–—]\s", text[link.end() :])[0]
        words = trim_end(clause.split()[:SAID_WORDS])
        if words:
            return " ".join(words)
    return ""


# "What natural disaster affected the town?", "What inspired Ilse to …?": "what", with its
# noun, is the subject of the verb right after it (in its past form), and a sentence in the
# passive names that subject after "by" ("the town was hit by a flood").
_ASKS_SUBJECT = re.compile(r"^\s*[Ww]hat(?:\s+[a-z][\w'’-]*){0,2}?\s+[a-z][\w'’-]*ed\s+(?!by\b)")
_BY_AGENT = re.compile(
    r"\b(?:is|are|was|were|been|being|got|gets|get)\s+(?:[a-z]+ly\s+)?"
    r"[a-z][\w'’-]*(?:ed|en|t)\s+by\s+",
    re.I,
)


def passive_agent(question: str, text: str, asked: set[str]) -> str:
    """What a question that asks for its verb's subject ("What flood affected …?") asks,
    as ``text`` says it in the passive: the phrase after its "by" (see object_after); ""
    when the question has another shape or ``text`` no such phrase."""
    if not _ASKS_SUBJECT.match(question):
        return ""
    return _object_after_first(_BY_AGENT, text, asked)


def _object_after_first(opener: re.Pattern[str], text: str, asked: set[str]) -> str:
    """The phrase after the first place ``opener`` matches in ``text`` that is followed by
    one (see object_after); "" when none is."""
    for found in opener.finditer(text):
        tokens = re.findall(r"[\w'’-]+|[^\w\s]", text[found.end() :])
        phrase = object_after(tokens, 0, asked)
        if phrase:
            return phrase
    return ""


# "What did Gina receive from a dance contest?": where a sentence says the question's
# phrase of a preposition ("from a dance contest") after a noun phrase, that noun phrase
# stands where the question's "what" does ("one of my trophies from a dance contest").
_ASKED_PHRASE = re.compile(
    r"\b(" + "|".join(sorted(PREPOSITIONS - {"of", "than", "like"})) + r")\s+"
    r"((?:[\w'’-]+\s+){0,3}?[\w'’-]+)\s*(?=[?,]|\s+(?:"
    + "|".join(sorted(PREPOSITIONS))
    + r")\b|$)",
    re.I,
)
HEAD_WORDS = 3


def head_before(question: str, text: str, asked: set[str]) -> str:
    """The noun phrase ``text`` says right before the question's own phrase of a
    preposition (the same preposition, then a content word of the question's phrase):
    what that phrase qualifies, as the question's "what" does. At most HEAD_WORDS words,
    after the determiners and function words before it, none a verb's -ed or -ing form,
    and saying something the question (its terms ``asked``) does not; "" if none."""
    if not re.match(r"\s*(?:what|which)\b", question, re.I) or STRANDED_PREPOSITION.search(
        question
    ):
        return ""  # one ending in a preposition asks for its object (stranded_object)
    phrases = []
    for found in _ASKED_PHRASE.finditer(question):
        stems = stem_set(found.group(2)) - STOP
        if stems:
            phrases.append((found.group(1).lower(), stems))
    if not phrases:
        return ""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        low = token.lower()
        for prep, stems in phrases:
            if low != prep or not stem_set(" ".join(tokens[n + 1 : n + 5])) & stems:
                continue
            words: list[str] = []
            for before in reversed(tokens[max(0, n - HEAD_WORDS) : n]):
                b = before.lower()
                if (
                    not re.match(r"[\w'’-]+$", before)
                    or b in STOP | PHRASE_EDGE | PREPOSITIONS
                    or TIME_WORD.match(b)
                ):
                    break
                words.insert(0, before)
            if (
                words
                and not words[-1].lower().endswith(("ed", "ing"))
                and stem_set(" ".join(words)) - asked
            ):
                return " ".join(words)
    return ""


# "What did Maria receive?" is answered by its converse, said of the giver: "they gave me a
# medal" says what the speaker received, as the object after the one it was given to.
_RECEIVED = frozenset(analyze("receive get win earn"))
_GIVEN = re.compile(
    r"\b(?:gave|give|gives|given|giving|awarded|handed|sent|presented|offered|bought|got)\s+"
    r"(?:me|us|him|her|them)\b",
    re.I,
)


def received(question: str, text: str, asked: set[str]) -> str:
    """What ``text`` says was given to its speaker (or the one it names), asked "what did X
    receive/get/win?" ("they gave me a medal": "a medal"); "" when the question has another
    verb or ``text`` says no giving."""
    if not asked_verb(question) & _RECEIVED:
        return ""
    return _object_after_first(_GIVEN, text, asked)


# "What did Melanie realize …?": a verb said with "that" and a clause ("I'm starting to
# realize that self-care is really important") takes the clause as its object, what was
# realised, learnt or decided.
# "that" opens a clause when a subject pronoun follows it, or a form of "be" or an
# auxiliary within its next three words ("that self-care is …"); "that book you
# recommended" is a determiner's noun phrase.
_THAT_CLAUSE = re.compile(
    r"\s+that\s+((?:(?:i|we|you|he|she|they|it)\b|(?:[\w'’-]+\s+){1,2}"
    r"(?:is|are|was|were|has|have|had|can|could|will|would|should|must|needs?)\b)[^.;!?]*)",
    re.I,
)
CLAUSE_WORDS = 12
THAT_SENTENCES = 5


def _said_by_asked(r: Ranking, s: Said) -> bool:
    """Whether ``s`` was said by a speaker the question names (any, when it names none)."""
    return not r.asked_speakers or bool(set(analyze(s.speaker)) & r.asked_speakers)


def that_clause(question: str, text: str) -> str:
    """The clause ``text`` says after the question's verb and "that" ("realize that
    self-care is important": "self-care is important"), to the sentence's end or a dash,
    at most CLAUSE_WORDS words; "" when the question asks no verb or ``text`` does not say
    it so."""
    verb = asked_verb(question)
    if not verb:
        return ""
    for found in re.finditer(r"[\w'’-]+", text):
        if not same_stem(set(analyze(found.group(0))), verb):
            continue
        clause = _THAT_CLAUSE.match(text, found.end())
        if clause:
            words = trim_end(re.split(r"\s[-–—]\s|,", clause.group(1))[0].split()[:CLAUSE_WORDS])
            if len(words) >= 2:
                return " ".join(words)
    return ""


# "What advice does X give?": advice is said in the imperative ("Do your research and find
# an agency"), a verb with no subject before it, its object next; the whole clause is it.
_ASKS_ADVICE = re.compile(r"^\s*[Ww]hat\s+(?:\w+\s+)?(?:advice|tips?|suggestions?)\b")
_IMPERATIVE = re.compile(
    r"^\s*(?:(?:just|always|never|don['’]t|do\s+not)\s+)?"
    r"(?!(?:i|we|you|he|she|they|it|this|that|there|the|a|an|my|our|yeah|yes|so|and|but)\b)"
    r"[a-z]+\s+(?:your|the|a|an|it|them|some|yourself|up|out|on)\b",
    re.I,
)
ADVICE_WORDS = 16


def advice(question: str, text: str) -> str:
    """The clause ``text`` gives as advice, asked "what advice does X give?": a sentence in
    the imperative, to its end (at most ADVICE_WORDS words); "" when the question asks
    something else or ``text`` is no imperative."""
    if not _ASKS_ADVICE.match(question) or not _IMPERATIVE.match(text):
        return ""
    words = re.split(r"[.;!?]", text)[0].split()
    return " ".join(words) if len(words) <= ADVICE_WORDS else ""


def thing(r: Ranking) -> Extracted:
    """What a "what" question asks: the noun phrase of the kind asked (an activity: the
    verb's object, or a verb's -ing form), the reason asked "why", the object the
    question's grammar asks for in the best sentence (of the preposition it ends in, or of
    its verb), else the phrase that says most the question does not (from the sentence a
    pointing sentence leans on)."""
    question = untimed(r.question)
    glossed = defined(r)
    if glossed:
        return glossed  # "What is FL-212?": what memory says it is
    called = nickname(r)
    if called:
        return called  # "What nickname does Nate use for Joanna?": the name cut short
    if ASKS_FEELING.search(question) and not re.match(r"\s*why\b", question, re.I):
        for s in r.near():
            feeling = felt(s.claim) or stirred(s.claim) or regard(s.claim)
            if feeling:
                return feeling, [s]
        # Said without "feel", a feeling is what its subject is ("I'm so thankful").
        for s in r.near():
            feeling = manner(s.claim, r.weigher.terms | r.weigher.names)
            if feeling:
                return feeling, [s]
    state = described_state(r, question)
    if state:
        return state
    labelled = _labelled(r, question)
    if labelled:
        return labelled
    # An event or advice is asked: a clause, no noun phrase.
    for s in r.near():
        clause = happened_to(question, s.claim) or advice(question, s.claim)
        if clause:
            return clause, [s]
    for s in r.near():
        clause = effect_on(question, s.claim)
        if clause:
            return clause, [s]
    # The asked verb said with its clause is rare, and says what was realised or decided
    # more surely than the best sentence's words: looked for a little past the best three,
    # in what the person asked about said.
    for s in r.near(THAT_SENTENCES):
        clause = that_clause(question, s.claim) if _said_by_asked(r, s) else ""
        if clause:
            return clause, [s]
    noun = asked_noun(question)
    picture = _picture_shown(r, question, noun)
    if picture:
        return picture
    which = named_which(r, question)
    if which:
        return which
    if noun:
        # "Been reading that book you recommended": which book, the listener named.
        recalled = _recalled(r, noun)
        if recalled:
            return recalled
        for s in r.near():
            phrase = with_complement(
                s.claim, noun_phrase(s.claim, noun, r.weigher.terms | r.weigher.names)
            )
            if phrase:
                # "My old area was hit by a flood": which area, its speaker names where
                # they say it again ("my old area, West County").
                named = (
                    named_elsewhere(r, s, phrase)
                    or named_next(r, s, phrase, noun)
                    or named_near(r, phrase, noun)
                )
                if named:
                    return named
            if not phrase:
                # A sentence may give it as the object the question's grammar asks for
                # ("What kind of experience did she get accepted for?"), not by its noun.
                phrase = grammar_object(question, s.claim, r.weigher.terms | r.weigher.names)
            if not phrase:
                # Or by its title in quotes ("this fantasy RPG called "Xenoblade
                # Chronicles""): a title names one thing, whatever noun it is said with.
                phrase = quoted_title(split_caption(s.claim)[0], r.weigher.terms | r.weigher.names)
            if phrase:
                return phrase, [s]
            # "My favorite is a theme from a movie": the noun with a bare determiner says
            # there is one, and the name may come next, as after "a new team" (named_next).
            named = named_after_bare(r, s, noun)
            if named:
                return named
        kind = compound_kind(question)
        for s in r.near() if kind else []:
            # "What career path …?": a sentence may say only the kind of path ("counseling
            # as a career", "counseling career options").
            asked = r.weigher.terms | r.weigher.names
            phrase = noun_phrase(s.claim, kind, asked) or taken_as(s.claim, kind, asked)
            if phrase:
                return phrase, [s]
        if noun.lower() == "activity" or _DONE_AS.match(question):
            best = r.best()
            asked = r.weigher.terms | r.weigher.names
            done = verb_object(question, best.claim, asked) or gerund(best.claim, asked)
            if done:
                return done, [best]
    else:
        # "What was X's favourite memory?": the noun the question equates the answer with;
        # the best sentence names it, or sets a phrase beside it ("my memory - the final").
        noun = equated_noun(question)
        best = r.best()
        asked = r.weigher.terms | r.weigher.names
        phrase = (equated(best.claim, noun, asked) if noun else "") or superlative(
            question, best.claim, asked
        )
        if not phrase and noun:
            phrase = owned_subject(best.claim, asked)
        if phrase:
            return phrase, [best]
    if re.match(r"\s*why\b", r.question, re.I):
        for s in r.near():
            reason = reason_given(s.claim)
            if reason:
                return reason, [s]
        # A reason only implied is taken from the best sentence alone.
        best = r.best()
        reason = implied_reason(best.claim, r.weigher.terms - r.weigher.names)
        if reason:
            return reason, [best]
        for s in r.near():
            reason = purpose_of(r.question, s.claim, _said_by_asked(r, s))
            if reason:
                return reason, [s]
    if re.match(r"\s*how\b", r.question, re.I):
        asked = r.weigher.terms | r.weigher.names
        for s in r.near():
            means = enabler(s.claim, asked)
            if means:
                return means, [s]
        best = r.best()
        found = manner(best.claim, asked)
        if found:
            return found, [best]
    # The object the question's grammar asks for, from the best sentence.
    best = r.best()
    asked = r.weigher.terms | r.weigher.names
    told = _told_next(r, best)
    if told:
        # "Last weekend I did something new.": what it was, the speaker says next.
        best = told
    phrase = (
        said_about(question, best.claim)
        or grammar_object(question, best.claim, asked)
        or passive_agent(question, best.claim, asked)
        or received(question, best.claim, asked)
    )
    if phrase:
        return phrase, [best]
    phrase = head_before(question, best.claim, asked)
    if phrase:
        return phrase, [best]
    # The phrase is cut as a constituent: a "what" answer is a phrase of its own, neither
    # the clause's opener and subject nor half of a coordination.
    noun_asked = asks_noun_phrase(question)
    activity_asked = bool(_ASKS_ACTIVITY.search(question))
    for best in r.near():
        # "It was magical": what was magical is named in the sentence before. A sentence
        # that names a title in quotes ("I just watched "Little Women" and it was
        # amazing!") says itself what "it" is, though it says few other words.
        leans = points_back(best.claim) and not quoted_titles(best.claim)
        said = best.before if leans and best.before else best.claim
        phrase = novel_phrase(
            said,
            r.weigher.terms,
            r.speakers,
            constituent=True,
            noun_asked=noun_asked,
            activity_asked=activity_asked,
        )
        if phrase:
            return phrase, [best]
    return "", [r.best()]


# "What did she research?", "What book …?": the thing asked is a noun phrase. "What did
# they do …?" asks for an activity, a verb phrase; "What is she doing?" too.
# The main verb "do" follows an auxiliary or "to"; the first "do" of "What do they like?"
# is the auxiliary itself.
_ASKS_ACTIVITY = re.compile(
    r"\b(?:(?:do|does|did|will|would|can|could|should|might|to)\b.*\bdo|doing)\b", re.I
)


def asks_noun_phrase(question: str) -> bool:
    """Whether ``question`` asks "what" of a thing, answered by a noun phrase, rather than
    of an activity ("What did they do?")."""
    return bool(re.match(r"\s*(?:what|which)\b", question, re.I)) and not (
        _ASKS_ACTIVITY.search(question)
    )


def _labelled(r: Ranking, question: str) -> Extracted | None:
    """Asked "what <word> …?" ("What caused the incident?"), what a sentence near the best
    gives under a label that names that word ("Root cause: the feed returned the high water
    twice; …"), to the label's first clause: notes and records say their fields so."""
    asked = _ASKED_WORD.match(question)
    if not asked:
        return None
    word = set(analyze(asked.group(1)))
    for s in r.near():
        field = _LABEL.match(s.claim or s.text)
        if field and set(analyze(field.group(1))) & word:
            value = re.split(r"[;]|\.\s", field.group(2), maxsplit=1)[0].strip(" .")
            if value:
                # A field's value is read whole: cut, "… high water for" says no cause.
                return " ".join(value.split()[:_FIELD_WORDS]), [s]
    return None


# "What caused …", "What was the impact of …": the word asked after "what".
_ASKED_WORD = re.compile(
    r"^\s*[Ww]hat\s+(?:(?:is|was|were|are)\s+)?(?:the\s+)?([a-z][\w-]*)\b(?<!\bthe)"
)
_FIELD_WORDS = 2 * REASON_WORDS
# A sentence that opens with a label of a few words and a colon.
_LABEL = re.compile(r"^([A-Za-z][\w-]*(?:\s+[\w-]+){0,2}):\s+(.+)$")


# "What kind of pot did X make?" asks about the verb as "What pot did X make?" does.
_KIND_OF = re.compile(r"^(\s*[Ww]hat)\s+(?:kind|type|sort|form|style)s?\s+of\s+")


def _picture_shown(r: Ranking, question: str, noun: str) -> Extracted | None:
    """What a picture shared with one of the three best sentences shows, when it shows the
    thing asked (kbmem.research.shown); None otherwise."""
    plain = _KIND_OF.sub(r"\1 ", question)
    verb = asked_verb(plain)
    asked = r.weigher.terms | r.weigher.names
    for s in r.near():
        # The speaker's own words that say which one ("I'm after Marley flooring", a title
        # in quotes, "I baked a lemon cake") answer, from here on, not a picture
        # ("thoughtful signs like this!" points at the picture instead, and so does "I
        # made it").
        words, _scene = split_caption(s.claim or s.text)
        if (
            noun
            and not points_at(words, noun)
            and (
                noun_phrase(words, noun, asked)
                or quoted_title(words, asked)
                or grammar_object(question, words, asked)
            )
        ):
            noun = ""
        picture = shown(question, s, noun, verb)
        if picture:
            return picture, [s]
        if verb and _names_object(verb_object(plain, words, asked)) and not pointed(words, verb):
            verb = set()
    return None


# Objects that say no which ("make something with clay").
_INDEFINITE = frozenset("something anything everything nothing stuff thing things".split())


def _names_object(phrase: str) -> bool:
    """Whether a verb's object ``phrase`` names a thing (not "something …")."""
    return bool(phrase) and phrase.split()[0].lower() not in _INDEFINITE


# "What happened to Melanie's son?" asks what befell the son: the clause that says it.
_HAPPENED_TO = re.compile(
    r"^\s*[Ww]hat\s+(?:has\s+|had\s+)?happened\s+to\s+(?:[\w'’-]+\s+){0,3}?([a-z][\w'’-]*)"
    r"\s*(?:\?|$|\s+(?:on|in|at|during|after|before|when|while)\b)"
)
# "How did the flood impact the homes?" asks the same of the homes: what became of them.
_AFFECTED = re.compile(
    r"^\s*[Hh]ow\s+(?:did|does|has|have|had)\s+.+?\s+(?:affect|impact|change|hurt|damage)\s+"
    r"(?:[\w'’-]+\s+){0,3}?([a-z][\w'’-]*)\s*(?:\?|$|\s+(?:in|on|at|of|during)\b)"
)
_CLAUSE_OPENERS = frozenset("when while because since after before that and but so".split())
_HOLDER = frozenset("my our his her their the a an this that".split())
EVENT_WORDS = 10


def happened_to(question: str, text: str) -> str:
    """What ``text`` says befell the noun a "what happened to N?" (or "how did X affect
    N?") question names: said of N as its subject ("when my son got into an accident"),
    the predicate ("got into an accident"); N said elsewhere in its clause ("I lost my job
    at the company", "so lots of homes were ruined"), the whole clause; to the clause's
    end, at most EVENT_WORDS words. "" when the question has another shape or ``text``
    does not say N."""
    found = _HAPPENED_TO.match(untimed(question)) or _AFFECTED.match(untimed(question))
    if not found:
        return ""
    stems = stem_set(found.group(1))
    for clause in CLAUSE_CUT.split(text.split("[shares", 1)[0]):
        words = re.findall(r"[\w'’-]+", clause)
        at = next((n for n, w in enumerate(words) if stem_set(w) == stems), None)
        if at is None:
            continue
        # The clause starts after the last word that opens one before the noun.
        start = max((n + 1 for n in range(at) if words[n].lower() in _CLAUSE_OPENERS), default=0)
        if all(w.lower() in _HOLDER for w in words[start:at]) and at + 1 < len(words):
            taken = words[at + 1 :]  # the noun is the subject: what it did or underwent
        else:
            taken = words[start:]
        taken = trim_end(taken[:EVENT_WORDS])
        if len(taken) >= 2:
            return " ".join(taken)
    return ""


# Asked how something affected someone, what it made or helped them do is its effect ("It
# made me think again about following dreams"), to where the clause ends.
_EFFECT = re.compile(
    r"\b((?:made|makes|helped|helps|taught|teaches|pushed|pushes|inspired|inspires)\s+"
    r"(?:me|us|him|her|them)\s+(?:to\s+)?[a-z][^.;:!?]*)",
    re.I,
)


def effect_on(question: str, text: str) -> str:
    """Asked how something affected someone (_AFFECTED), what ``text`` says it made or
    helped them do, at most EVENT_WORDS words; "" for another question or none said."""
    if not _AFFECTED.match(untimed(question)):
        return ""
    found = _EFFECT.search(text.split("[shares", 1)[0])
    if not found:
        return ""
    words = trim_end(CLAUSE_CUT.split(found.group(1), maxsplit=1)[0].split()[:EVENT_WORDS])
    return " ".join(words) if len(words) >= 3 else ""


# "What creative project do Ilse and her kids do together?": a noun that the question's
# main verb "do" takes as its object is a thing done, an activity, whatever its word; it is
# named as activities are (the verb's object, or a verb's -ing form).
_DONE_AS = re.compile(
    r"^\s*[Ww]hat(?:\s+[a-z][\w'’-]*){1,3}\s+(?:do|does|did)\s+(?:[\w'’-]+\s+){1,4}?do\b"
)


# A sentence that says what was done only as "something" ("I did something new that had
# an impact on me") announces it: the speaker's next sentence says what.
_ANNOUNCES = re.compile(r"\b(?:something|a\s+thing)\b(?!\s+(?:like|as)\b)", re.I)


def _told_next(r: Ranking, s: Said) -> Said | None:
    """The next sentence of ``s``'s turn, by its speaker, when ``s`` announces what it is
    about as "something" (_ANNOUNCES); else None."""
    if not _ANNOUNCES.search(s.claim or s.text):
        return None
    return next(
        (
            n
            for n in r.all
            if n.item is s.item
            and n.before == s.text
            and n.speaker == s.speaker
            and not n.text.endswith("?")
        ),
        None,
    )
