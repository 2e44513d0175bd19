"""The constituents a sentence's grammar gives, which the "what" and list answers take
(kbmem.research.what, kbmem.research.lists): the noun phrase that ends in a noun
(``noun_phrase``) and what names a noun after it (``named_by``), the object of the
preposition a question ends in (``stranded_object``) or of the verb it asks about
(``verb_object``, ``done_object``), and an activity's -ing form (``gerund``)."""

from __future__ import annotations

import re

from kbmem.index.late import FUNCTION_WORDS
from kbmem.index.tenant import analyze
from kbmem.research.grammar import (
    CLAUSE_LINKS,
    PHRASE_EDGE,
    SUBJECT,
    SUBJECT_WORDS,
    WH_WORDS,
    trim_end,
)
from kbmem.research.said import STOP
from kbmem.research.spans import CALENDAR, PREPOSITIONS, TIME_WORD, coordinated, joined


def noun_phrase(text: str, noun: str, asked: set[str]) -> str:
    """The noun phrase of ``text`` that ends in ``noun`` (by stem) and says, in the words
    before it, what the question (its terms ``asked``) does not: asked what kind of
    flooring, "I'm after Marley flooring" answers "Marley flooring". The name the noun is
    given right after it, or the phrase set beside it after a dash or colon, says which
    one it is better still (see named_by). "" if none does."""
    stems = set(analyze(noun))
    found = list(re.finditer(r"[\w'’-]+|[^\w\s]", text))
    tokens = [m.group(0) for m in found]
    for n, token in enumerate(tokens):
        if not stems or set(analyze(token)) != stems:
            continue
        # "books- classics": a dash written against the noun still sets a phrase beside it.
        rest = ("- " if token.endswith("-") else "") + text[found[n].end() :]
        named = named_by(rest, asked)
        if named:
            return named
        words: list[str] = []
        at = n
        while at > 0 and len(words) < 3:
            before, low = tokens[at - 1], tokens[at - 1].lower()
            if (
                low in ("and", "or", ",")
                and words
                and at > 1
                and re.match(r"[\w'’-]+$", tokens[at - 2])
                and tokens[at - 2].lower() not in STOP | PHRASE_EDGE
            ):
                # Modifiers coordinated ("red and purple lighting", "a safe, inviting
                # place"): both are the kind.
                words[:0] = [tokens[at - 2], before]
                at -= 2
                continue
            if not re.match(r"[\w'’-]+$", before) or low in STOP | PHRASE_EDGE:
                break
            if TIME_WORD.match(low) or SUBJECT.match(low):
                break  # "weekend yoga" says when, "I'm" whose: neither is the kind
            words.insert(0, before)
            at -= 1
        if words and _after_subject(tokens[:at]):
            # "I'm trying kundalini yoga", "I also enjoy aerial yoga": the word after the
            # subject is its verb, not a word of the noun's phrase.
            words = words[1:]
        if any(set(analyze(w)) - asked for w in words):
            return joined([*words, token])
    return ""


# Words that may stand between a subject and its verb ("I also enjoy", "we really love").
_BETWEEN_SUBJECT_AND_VERB = frozenset(
    "also really just still always often never usually sometimes even too now do did".split()
)


def _after_subject(before: list[str]) -> bool:
    """Whether the tokens ``before`` a word end in a subject pronoun (with adverbs after
    it): that word is then the subject's verb."""
    at = len(before) - 1
    while at >= 0 and (
        before[at].lower() in _BETWEEN_SUBJECT_AND_VERB or before[at].lower().endswith("ly")
    ):
        at -= 1
    return at >= 0 and bool(SUBJECT.match(before[at]))


# What names a noun right after it: a title in quotes or a capitalised name, bare or after
# a verb of naming ("a piece called "Finding Freedom"", "this game Catan"); or a phrase set
# beside it after a dash or colon ("a new project - a thriller set in a small town"), which
# reads as a noun phrase, no clause of its own ("my bike - it was cheap", see _nominal).
NAME_AFTER = re.compile(
    r"^,?\s*(?:(?:called|named|titled)\s+)?"
    r"(?:\"([^\"]{2,60})\"|“([^”]{2,60})”|([A-Z][\w'’-]*(?:\s+(?:[A-Z][\w'’-]*|of|the|and))*))"
)
# A code names the noun before it as a name does ("region eu-west-2", "room B12", "ticket
# FL-212"), also past one word that says which of the noun's values it is ("region preference
# eu-west-2"): letters and digits joined, a form no common word has; not a number with its
# unit or ordinal ("3pm", "2nd", "10km").
_CODE_AFTER = re.compile(
    r"^\s*(?:[a-z]+\s+)?(?!\d+(?:st|nd|rd|th|am|pm|s|k|m|h|km|kg|min)\b)((?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9]+(?:[.-][A-Za-z0-9]+)*)\b"
)
_APPOSITION_AFTER = re.compile(r"^\s*(?:[-–—]+|:)\s*([^.;!?\-–—:()\[\]]{3,})")
APPOSITION_WORDS = 12


# What an apposition opens with: a determiner, a number word, or the "to" of an infinitive.
_NOMINAL_OPENERS = frozenset(
    "a an the this that these those my your his her its our their some any each every no "
    "one two three few several many to".split()
)


def _nominal(words: list[str]) -> bool:
    """Whether ``words`` set beside a noun read as a noun phrase, as an apposition is: one
    opening with a determiner or a number ("a thriller set in …"), an infinitive ("a good
    cause - to help …"), a list ("classics, stories …"), or a few words ("pizza"); not a
    clause ("check out this pic …")."""
    first = words[0].lower()
    return (
        first in _NOMINAL_OPENERS
        or first.isdigit()
        or any(w.endswith(",") for w in words[:3])
        or len(words) <= 3
    )


def named_by(rest: str, asked: set[str]) -> str:
    """What names the noun that ``rest`` follows (see NAME_AFTER), or the phrase set
    beside it (at most APPOSITION_WORDS words); "" when neither says what the question (its
    terms ``asked``) does not."""
    found = NAME_AFTER.match(rest)
    if found:
        name = next(g for g in found.groups() if g).strip(" .,;:!?")
        words = trim_end(name.split(), {"of", "the", "and"})
        name = " ".join(words)
        low = name.lower()
        if (
            words
            and low not in SUBJECT_WORDS
            and words[0].lower() not in CALENDAR | STOP
            and set(analyze(name)) - asked
        ):
            return name
    code = _CODE_AFTER.match(rest)
    if code and set(analyze(code.group(1))) - asked:
        return code.group(1)
    found = _APPOSITION_AFTER.match(rest)
    if found:
        words = found.group(1).split()[:APPOSITION_WORDS]
        first = re.split(r"['’]", words[0].lower().strip(","))[0]
        if first in SUBJECT_WORDS | CLAUSE_LINKS | WH_WORDS or not _nominal(words):
            return ""
        words = trim_end([w.strip(",") for w in words] if len(words) == 1 else words)
        phrase = " ".join(words).rstrip(",")
        if phrase and set(analyze(phrase)) - asked:
            return phrase
    return ""


# A question that ends in a preposition ("What did the race raise awareness for?") asks for
# its object: in a sentence that says the word before it and then the preposition, the
# words after that preposition, to the clause's end.
_STRANDED = re.compile(r"([\w'’-]+)\s+([a-z]+)\s*\?*\s*$", re.I)
STRANDED_PREPOSITION = re.compile(r"\b(?:" + "|".join(sorted(PREPOSITIONS)) + r")\s*\?*\s*$", re.I)
OBJECT_WORDS = 6
# Words after which a noun phrase has ended: an adverb of company ("dinner together") or a
# determiner that opens another phrase ("a poetry class this spring").
_PHRASE_ENDS = frozenset("together alone this that these those".split())


def stranded_object(question: str, text: str, asked: set[str]) -> str:
    """The object of the preposition ``question`` ends in, as ``text`` says it after the
    question's word before that preposition (``asked``: the question's terms, none of which
    the object may be made of); "" when the question ends otherwise or ``text`` does not."""
    found = _STRANDED.search(question.strip())
    if not found or found.group(2).lower() not in PREPOSITIONS:
        return ""
    word, prep = set(analyze(found.group(1))), found.group(2).lower()
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        if not word or not set(analyze(token)) & word:
            continue
        after = [t.lower() for t in tokens[n + 1 : n + 4]]
        if prep not in after:
            continue
        phrase = object_after(tokens, n + 2 + after.index(prep), asked, gerund=False)
        if phrase:
            return phrase
    return ""


_DASH_TOKEN = re.compile(r"^[-–—]+$")


def _last_conjunct(tokens: list[str], at: int) -> list[str]:
    """The "and" or "or" at token ``at`` with the one word it joins to the phrase before it,
    when that word ends the phrase ("pots and cups.", "mentoring and training to …"); [] when
    no conjunction stands there, or what follows it goes on ("and went home": a clause)."""
    if at + 1 >= len(tokens) or tokens[at].lower() not in ("and", "or"):
        return []
    word = tokens[at + 1]
    after = tokens[at + 2].lower() if at + 2 < len(tokens) else "."
    if (
        not re.match(r"[\w'’-]+$", word)
        or word.lower() in STOP | PHRASE_EDGE | SUBJECT_WORDS
        or TIME_WORD.match(word.lower())
    ):
        return []
    if re.match(r"[\w'’-]+$", after) and after not in PREPOSITIONS | CLAUSE_LINKS:
        return []
    return tokens[at : at + 2]


# "personal experiences and my own journey of self-discovery": an "and" (or "or") followed by
# a determiner or a possessive opens a second noun phrase of the same list; it is a clause
# instead ("and my dog loved it") when a verb follows its noun, so the phrase must end the
# clause (or meet a preposition other than "of", which belongs to its noun) and hold no
# auxiliary and no -ed form.
_CONJUNCT_OPENERS = frozenset("my his her their our your the a an".split())
_FINITE = frozenset(
    "is are was were am be been has have had do does did will would can could "
    "should may might must".split()
)
CONJUNCT_WORDS = 7


def _noun_phrase_conjunct(tokens: list[str], at: int) -> list[str]:
    """The "and"/"or" at token ``at`` with the noun phrase it joins to the phrase before
    it (see _CONJUNCT_OPENERS); [] when none stands there or what follows is a clause."""
    if at + 2 >= len(tokens) or tokens[at].lower() not in ("and", "or"):
        return []
    if tokens[at + 1].lower() not in _CONJUNCT_OPENERS:
        return []
    end = at + 2
    while end < len(tokens) and end - at <= CONJUNCT_WORDS:
        low = tokens[end].lower()
        if low in _FINITE or low.endswith("ed"):
            return []
        if not re.match(r"[\w'’-]+$", low) or low in CLAUSE_LINKS or TIME_WORD.match(low):
            break
        if low in PREPOSITIONS and low != "of":
            break
        end += 1
    if end == at + 2 or (end < len(tokens) and end - at > CONJUNCT_WORDS):
        return []
    return tokens[at:end]


def object_after(tokens: list[str], at: int, asked: set[str], gerund: bool = True) -> str:
    """The phrase that starts at token ``at`` (after its function words), to the first
    preposition (a lone gerund keeps its own: "volunteering at a shelter"), time word or
    clause word, with the whole list it is an item of (spans.coordinated); "" when it says
    nothing the question (its terms ``asked``) does not."""
    # A dash right after the verb sets its object beside it ("news to share - I joined …").
    while at < len(tokens) and (
        tokens[at].lower() in PHRASE_EDGE | STOP or _DASH_TOKEN.match(tokens[at])
    ):
        at += 1
    end = at
    while end < len(tokens) and end - at < OBJECT_WORDS:
        t, low = tokens[end], tokens[end].lower()
        if (
            not re.match(r"[\w'’-]+$", t)
            or _DASH_TOKEN.match(t)
            or low in CLAUSE_LINKS | _PHRASE_ENDS
            or TIME_WORD.match(low)
        ):
            break
        lone_gerund = gerund and end == at + 1 and tokens[at].lower().endswith("ing")
        if low in PREPOSITIONS and not lone_gerund:
            break
        end += 1
    words = trim_end(tokens[at:end])
    if not words or not set(analyze(" ".join(words))) - asked:
        return ""
    if len(words) == end - at:
        words += _last_conjunct(tokens, end) or _noun_phrase_conjunct(tokens, end)
    first, last = coordinated(tokens, at, at + len(words) - 1)
    return joined(tokens[first : last + 1])


# "What did Caroline research?", "What did Mel and her kids make during …?": the verb after
# the auxiliary and a named subject (with whom they did it, or what of theirs: "Ilse's ring"),
# when the question says no object of it (it ends, or a preposition, a particle, an adverb or
# a time follows). An adverb may stand before the verb ("did X just finish"), and so may a
# verb of aspect that takes it as its complement ("has X started learning", "did X try to
# bake"); after a form of "be" the verb is its -ing form ("is X trying out").
_VERB_ENDS = PREPOSITIONS | frozenset(
    "after before during since until through across along among between against without "
    "within upon together last this that when while yesterday today "
    "out up off back down away".split()
)
_ADVERBS = "just|recently|also|really|usually|often|ever|still|first|finally|now|currently"
_PRE_VERB = rf"(?:\s+(?:{_ADVERBS}|[a-z]+ly))?"
_ASPECT = (
    r"(?:\s+(?:start|starts|started|begin|began|begun|keep|keeps|kept|try|tries|tried)"
    r"(?:\s+to)?)?"
)
_ASKED_VERB = re.compile(
    r"^\s*[Ww]hat(?:\s+[a-z][\w'’-]*){0,2}\s+"
    r"(did|does|do|has|have|had|will|would|can|is|are|was|were)\s+"
    r"[A-Z][\w-]*(?:['’]s(?:\s+[a-z][\w'’-]*){1,2}?)?"
    r"(?:\s+(?:and|&)\s+(?:(?:his|her|their)\s+[a-z][\w'’-]*|[A-Z][\w-]*))?"
    + _PRE_VERB
    + _ASPECT
    + rf"\s+(?!(?:{_ADVERBS})\b)([a-z][\w'’-]*)(?=\s*\?|\s+(?:"
    + "|".join(sorted(_VERB_ENDS))
    + r"|[a-z]+ly)\b)"
)
_BE = frozenset("is are was were".split())


def asked_verb(question: str) -> set[str]:
    """The stems of the verb a "what did X do?" question asks about; empty when the
    question is of another shape."""
    found = _ASKED_VERB.match(question)
    if not found:
        return set()
    verb = found.group(2).lower()
    if verb in FUNCTION_WORDS | PREPOSITIONS | CLAUSE_LINKS:
        return set()
    if found.group(1).lower() in _BE and not verb.endswith("ing"):
        return set()  # "What is X excited about?": a state, no verb done
    return set(analyze(verb))


def verb_object(question: str, text: str, asked: set[str]) -> str:
    """What a "what did X do?" question asks for: the object of its verb, as ``text``
    says it right after that verb (in any form: "made our own pots" for "make"; see
    object_after); "" when the question is of another shape or ``text`` does not say the
    verb with an object of words the question does not have (``asked``)."""
    verb = asked_verb(question)
    if not verb:
        return ""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        if same_stem(set(analyze(token)), verb) and not (
            n and tokens[n - 1].lower() in _NOUN_DETERMINERS
        ):
            # After an article or a possessive the word is a noun ("do your research and
            # find …"): it takes no object. A verb that takes its object through a
            # preposition ("participated in a 5K run") when the question names none.
            at = n + 2 if n + 1 < len(tokens) and tokens[n + 1].lower() in PREPOSITIONS else n + 1
            phrase = object_after(tokens, at, asked)
            if phrase:
                return phrase
    return ""


# Determiners that only ever stand before a noun ("her" is an object too: "help her paint").
_NOUN_DETERMINERS = frozenset("a an the my your his its our their every each".split())


def same_stem(a: set[str], b: set[str]) -> bool:
    """Whether stems ``a`` and ``b`` are of one word: equal, or one a stem of four letters
    or more that the other starts with (the analyzer stems "participate" to "particip" and
    "participated" to "participat")."""
    if a == b:
        return True
    if len(a) != 1 or len(b) != 1:
        return False
    x, y = sorted((next(iter(a)), next(iter(b))), key=len)
    return len(x) >= 4 and y.startswith(x)


def done_object(question: str, text: str, asked: set[str]) -> str:
    """What a list question's verb was done to, as ``text`` says it ("What has X
    painted?"): the verb's object ("painted that lake sunrise"), or, where the verb is said
    as a noun (after a determiner: "a painting"), the thing it is of ("a painting of a
    sunset") or the word that qualifies it ("my horse painting"). A verb followed by a
    preposition ("painted on a wall", "painting like our last one") says where or how, no
    object; "" when no form of the verb has one."""
    verb = asked_verb(question)
    if not verb:
        return ""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        if set(analyze(token)) != verb or token.endswith(("'s", "’s")):
            continue
        if _participle_of_noun(tokens, n):
            continue  # "a man playing a piano": the man plays, not whom the question asks
        if _subject_of_copula(tokens, n):
            continue  # "cooking is therapy for me": what cooking is, not what was cooked
        following = tokens[n + 1].lower() if n + 1 < len(tokens) else ""
        if (
            n >= 2
            and tokens[n - 1].lower() in _NOMINATIVE
            and tokens[n - 2].lower() not in _COORDINATORS
        ):
            # "These figurines I bought yesterday": the thing before the clause's subject
            # is what the verb was done to, after its determiner ("My mom and I made":
            # before a coordinator, it is the subject's other half).
            start = n - 2
            while (
                start > 0 and n - 2 - start < 2 and re.match(r"[a-z][\w'’-]*$", tokens[start - 1])
            ):
                if tokens[start - 1].lower() in PHRASE_EDGE | STOP | PREPOSITIONS:
                    break
                start -= 1
            if start > 0 and tokens[start - 1].lower() in PHRASE_EDGE - _COORDINATORS:
                words = tokens[start : n - 1]
                # "These days I play …": a stretch of time before the subject says when,
                # not what the verb was done to.
                when = bool(TIME_WORD.match(words[-1].lower().removesuffix("s")))
                if (
                    set(analyze(" ".join(words))) - asked
                    and re.match(r"[a-z]", words[0])
                    and not when
                ):
                    return " ".join(words)
        edge = n - 1
        while edge >= 0 and re.match(r"[a-z][\w'’-]*$", tokens[edge]):
            if tokens[edge].lower() in PHRASE_EDGE | STOP | PREPOSITIONS:
                break
            edge -= 1
        if edge >= 0 and tokens[edge].lower() in PHRASE_EDGE - _COORDINATORS:
            # A noun: what it is of, else the words between its determiner and it.
            if following == "of":
                phrase = object_after(tokens, n + 2, asked)
            else:
                words = tokens[edge + 1 : n]
                phrase = " ".join(words) if set(analyze(" ".join(words))) - asked else ""
        elif following in PREPOSITIONS:
            continue
        else:
            phrase = object_after(tokens, n + 1, asked)
        # A thing is a noun phrase: words that hold a pronoun ("helps me express …") are a
        # clause, the verb's form its subject.
        if phrase and not SUBJECT_WORDS & {w.lower() for w in re.findall(r"[\w'’-]+", phrase)}:
            return phrase
    return ""


_COORDINATORS = frozenset("and or but nor plus yet".split())
# The pronouns that are a clause's subject: "a photo of me cooking" has "me" as the object
# of "of", so "a photo of" is no thing the verb after it was done to.
_NOMINATIVE = frozenset("i we you he she they it".split())


def grammar_object(question: str, text: str, asked: set[str]) -> str:
    """The object ``question``'s grammar asks for, as ``text`` says it: of the preposition
    it ends in, else of its verb."""
    if STRANDED_PREPOSITION.search(question):
        return stranded_object(question, text, asked)
    return verb_object(question, text, asked)


def gerund(text: str, asked: set[str]) -> str:
    """The first verb's -ing form in ``text`` that the question (its terms ``asked``) does
    not say, with the word that qualifies it ("horseback riding"): what an activity is
    called ("hiking with my friends", "our camping trip"); "" if none."""
    tokens = re.findall(r"[\w'’-]+|[^\w\s]", text)
    for n, token in enumerate(tokens):
        low = token.lower()
        if (
            len(low) < 6
            or not low.endswith("ing")
            or low.endswith("thing")
            or low in STOP | FUNCTION_WORDS | _NOT_GERUNDS | _LIGHT_GERUNDS
            or set(analyze(token)) & asked
        ):
            continue
        before = tokens[n - 1] if n else ""
        if before.lower() in _DEGREE:
            continue  # "so refreshing", "how fleeting": an adjective, no activity
        qualified = (
            re.match(r"[a-z][\w'’-]*$", before)
            and before.lower() not in STOP | FUNCTION_WORDS | PHRASE_EDGE | PREPOSITIONS
            and not before.lower().endswith(("ed", "ing", "ly"))
            and not TIME_WORD.match(before)
            # After a noun with its determiner ("a person holding", "had a blast
            # exploring") the -ing form says what that noun does: it is no qualifier.
            and not (n >= 2 and tokens[n - 2].lower() in _DETERMINERS)
        )
        return f"{before} {token}" if qualified else token
    return ""


_COPULAS = frozenset("is was isn't wasn't".split())


def _subject_of_copula(tokens: list[str], at: int) -> bool:
    """Whether the -ing form at ``at`` is the subject of a form of "be" right after it
    ("cooking is therapy for me"): what follows says what the activity is, not what it
    was done to."""
    return (
        tokens[at].lower().endswith("ing")
        and at + 1 < len(tokens)
        and tokens[at + 1].lower() in _COPULAS
    )


def _participle_of_noun(tokens: list[str], at: int) -> bool:
    """Whether the -ing form at ``at`` follows a noun with its determiner and takes an
    object of its own ("a person holding a frisbee", "a man playing the piano"): it then
    says what that noun does. Without an object it may be a noun itself ("an abstract
    painting")."""
    if at < 2 or at + 1 >= len(tokens) or not tokens[at].lower().endswith("ing"):
        return False
    noun = tokens[at - 1].lower()
    return (
        tokens[at - 2].lower() in _DETERMINERS
        and tokens[at + 1].lower() in _DETERMINERS
        and bool(re.match(r"[a-z][\w'’-]*$", noun))
        and noun not in STOP | FUNCTION_WORDS | PHRASE_EDGE | PREPOSITIONS
    )


# Words of degree: an -ing form after one is an adjective ("so relaxing").
_DEGREE = frozenset(
    "how so very too really quite pretty more most less least extremely incredibly super "
    "truly".split()
)
_DETERMINERS = frozenset(
    "a an the this that these those my your his her its our their some any each every "
    "another no one two three four five six".split()
)


# Words in -ing that are no verb's form.
_NOT_GERUNDS = frozenset("during morning evening bring spring string ceiling".split())
# English's light verbs and verbs of mind: their -ing forms name no activity by themselves
# ("getting", "making", "thinking"); what is done is named by what follows them.
_LIGHT_GERUNDS = frozenset(
    "getting taking making having doing going coming putting giving keeping trying starting "
    "being feeling thinking seeing wanting needing letting saying telling knowing hoping".split()
)
_COPULA_NAME = re.compile(
    r"\b([A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)\s+(?:will\s+be|is|was|became|has\s+become)"
    r"\s+(?:our|their|the|my|his|her|its)\s+((?:[\w'’-]+\s*){1,4})"
)


def named_as(text: str, terms: set[str], exclude: set[str]) -> str:
    """The name ``text`` equates with a phrase that says at least two of the question's
    ``terms`` ("Skerrick Island Ferries will be our first pilot customer"), none of its
    words one of ``exclude`` (the question's names, the speakers); "" when it names none."""
    for m in _COPULA_NAME.finditer(text):
        name = m.group(1)
        if set(analyze(name)) & exclude or name.split()[0] in NOT_NAMES:
            continue
        if len(set(analyze(m.group(2))) & terms) >= 2:
            return name
    return ""


# Capitalised words that open a sentence or a clause and name no one.
NOT_NAMES = frozenset("I It This That These Those There He She They We You The A An".split())
