"""The offline engine: deterministic planning, integration and reflection, no network.

Planning reads the request's entities, rare terms and dates, and the memos (a memo that names
the request's rare terms points the plan at its session's pages); a request about a person
who speaks in memory is also searched in that person's voice, among their own turns (see
perspective). Reflection checks which of
the request's terms the evidence does not cover yet and follows entities that the evidence
introduces (multi-hop bridging: "the city where my sister lives" is searched again as
"<speaker> sister" to find where the sister lives)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kbmem.dates import MONTHS, date_windows, sessions_in
from kbmem.index.intervals import HEADING
from kbmem.index.tenant import Hit, analyze
from kbmem.memorize.memo import STOPWORDS
from kbmem.memorize.sessions import CHAT_AGENT
from kbmem.research.answer_types import answer_type, merit
from kbmem.research.reading import Reading
from kbmem.research.state import Candidate, ResearchState, holds_as_asked, term_set
from kbmem.research.types import IntegrationState, PlanAction, ReflectionDecision, Source
from kbmem.store.pages import TURN_HEADER, unescape_line
from kbmem.textutil import (
    CAPITAL,
    CLAUSE_BREAK,
    count_tokens,
    sentence_spans,
    split_sentences,
    truncate_tokens,
)

if TYPE_CHECKING:
    from kbmem.research.toolkit import Toolkit

QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did does do is are was were will would "
    "could should can has have had tell describe give list name kind type sort likely "
    "anything something someone recently ever".split()
)
_NAME_WORD = CAPITAL + r"[\w'’&.-]*"
_ENTITY = re.compile(rf"\b{_NAME_WORD}(?:\s+(?:of\s+|the\s+)?{_NAME_WORD})*")
_WORD = re.compile(r"[\w'’-]+")
# Where a request asks one thing and then another: "Who maintains X and when is Y?"
_REQUEST_PARTS = re.compile(r"[,;?]|\b(?:and|or|but|then|also|plus)\b", re.I)
# The most of one interval's text the engine reads (about 1,300 words; a LoCoMo turn is under
# 1,000 characters): its sentences are analysed again by every request that finds the interval,
# so a pasted 10 MB turn would otherwise cost every such request a minute.
READ_CHARS = 8_000
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_LABEL = re.compile(r"^[^\s:;][^:;]{0,30}:\s+")  # "Actions: ", "Offsite: "
_NUMBER = re.compile(r"\b\d[\d,.:/-]*\b")
# A statement that corrects an earlier one: "I need to correct something I said ... That's
# wrong. The public launch is Tuesday 21 April", "Correction recorded: 5,600 dollars, not
# 6,500 as stated at the review", "Sorry, I meant Thursday, not Tuesday", "I said the 14th at
# the kickoff, but it's the 21st". What it says is what memory holds now; what the speaker
# says before a retraction ("That's wrong.", "Scratch that.") is the statement being
# withdrawn.
_I_SAID = re.compile(
    r"\bI (?:said|told you|wrote|mentioned) ([^.;!?]{1,80}?),? (?:but|and) "
    r"(?:it's|it’s|it is|it was|actually|in fact|really)\b",
    re.I,
)
_OTHERS_HAVE = "".join(
    f"(?<!{who} a )" for who in ("he has", "he had", "you have", "you had", "they have", "they had")
)  # ("he has a" also stands for "she has a"; "we have a correction" may be one's own)
_CORRECTS = re.compile(
    # "he has a correction", "you said you had a correction": someone else's correction,
    # announced, not made ("I have a correction: ..." makes one).
    _OTHERS_HAVE
    + r"\b(?:correction|corrected|correcting|to correct|misread|mixed (?:\w+ ){0,3}up|I meant"
    r"|scratch that|strike that)\b"
    r"|\bnot (?:\d[.,]\d|[^.;!?]){1,60}? as (?:stated|said|announced|planned)\b"
    rf"|{_I_SAID.pattern}",
    re.I,
)
_RETRACTS = re.compile(
    r"^(?:no[,.]?\s+|sorry[,.]?\s+)?(?:(?:that(?:'s|’s| is| was)|i was|it was|we were) "
    r"(?:wrong|a mistake|not right|incorrect)\b|scratch that\b|strike that\b)",
    re.I,
)
# In a correcting statement, what it replaces: the value after "not", "instead of" or
# "rather than" ("not Tuesday 14 April 2026 as stated at the kickoff on 5 January": the span
# ends before "as stated", so the kickoff's own date is not replaced), and what "I said" gave.
_REPLACED = re.compile(
    r"\b(?:not|instead of|rather than) ((?:(?! as )(?:\d[.,]\d|[^.;!?,])){1,60})",
    re.I,
)
# A change said in so many words, of a decision or of a state: "X was replaced by Y",
# "replaced X with Y", "switched/moved/changed from X to Y", "changed X to Y", "(that
# decision was) reversed in favour of Y". X (``old``) no longer holds, Y (``new``) does;
# "that decision was reversed" with no X names the decision told just before it.
_THING = r"[^.;!?,()]{1,50}?"
# Where the value a change names ends: at a clause's end, or where the sentence goes on to
# say where, when, why or how ("to PostgreSQL 16 on Amazon RDS", "to Inverness last week").
_THING_END = (
    r"(?=[.;!?,()]|$|\s(?:on|in|at|for|because|after|before|with|since|from|last|this|next"
    r"|yesterday|today|ago|and|but|so)\b)"
)
_CHANGED = re.compile(
    r"\b(?:(?:switch|switched|switching|switches|mov(?:e|ed|es|ing)|chang(?:e|ed|es|ing)"
    rf"|migrat(?:e|ed|es|ing))\s+(?:\w+\s+){{0,4}}?from\s+(?P<a>{_THING})\s+to\s+"
    rf"(?P<b>{_THING}){_THING_END}"
    rf"|replac(?:e|ed|es|ing)\s+(?P<c>{_THING})\s+with\s+(?P<d>{_THING}){_THING_END}"
    r"|(?P<e>[\w'’.-]+(?:\s+[\w'’.-]+){0,3})\s+(?:was|were|has been|had been|is being|got)"
    rf"\s+replaced\s+by\s+(?P<f>{_THING}){_THING_END}"
    r"|(?:revers|overturn|overrul|abandon|dropp)ed\s+in\s+favou?r\s+of\s+"
    rf"(?P<g>{_THING}){_THING_END})",
    re.I,
)
# "That decision was reversed", "the plan was changed": a change of what was told before.
_POINTS_BACK = re.compile(
    r"\b(?:that|this|the|our|their|its)\s+(?:\w+\s+)?(?:decision|choice|plan|call)\b", re.I
)
_MONTH_NAMES = "|".join(MONTHS)
# A value a statement gives: a number, with the month it is a day of ("14 April", "April
# 14th"). A correction replaces values; an earlier statement that gives a replaced value is
# superseded.
_VALUE = re.compile(
    rf"\b(?:({_MONTH_NAMES})\s+)?"  # "April 14th"
    r"(\d[\d,.:]*\d|\d)(?:st|nd|rd|th)?\b"
    rf"(?:\s+(?:of\s+)?({_MONTH_NAMES})\b)?",  # "14 April", "the 21st of April"
    re.I,
)
# A quotation: the opening mark starts a word, the closing one ends it (so the apostrophes
# of "it's ... here's" are not a quote).
_QUOTED = re.compile(r"(?:^|(?<=\s))[\"“']([^\"”'\n]{3,60})[\"”'](?=[\s.,!?;:)]|$)")
_MY_NOUN = re.compile(
    r"\bmy\s+(?:(?:own|new|old|older|younger|little|big|best|dear|late|former)\s+)?([a-z]+)\b",
    re.I,
)
# People a speaker refers to by relation: "the city where my sister lives" is answered where
# the sister is talked about. Other nouns after "my" ("my favorite", "my love") are not
# references to someone else.
RELATIONS = frozenset(
    "mother mom mum father dad dada parents parent sister sisters brother brothers sibling "
    "siblings wife husband partner spouse fiance fiancee girlfriend boyfriend son sons "
    "daughter daughters kid kids child children baby grandma grandmother grandpa grandfather "
    "grandparents aunt uncle cousin cousins niece nephew family friend friends buddy bestie "
    "roommate neighbor neighbour boss manager colleague colleagues coworker coworkers mentor "
    "teacher coach teammate teammates team doctor therapist landlord".split()
)
# Capitalized words that are not names of anything to follow.
_NOT_NAMES = frozenset(
    "i i'm i've i'd i'll i’m i’ve i’d i’ll ok okay yes yeah hey hi hello thanks wow oh "
    "mon tue tues wed thu thur thurs fri sat sun".split()
)
# Times: capitalized ("over Christmas", "on Monday") but never someone or something that the
# evidence introduces and that another record would say more about.
TIME_WORDS = frozenset(MONTHS) | frozenset(
    "monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow day "
    "year year's eve christmas xmas easter halloween thanksgiving hanukkah diwali ramadan eid "
    "passover valentine's".split()
)
# Words that say little about what a request is after; never worth a follow-up search, and a
# name made of nothing else is not worth following.
GENERIC = (
    QUESTION_WORDS
    | STOPWORDS
    | TIME_WORDS
    | frozenset(
        "take place make go come happen thing things way time people feel felt want say said "
        "tell told get give use used start new old first last next many much since ago "
        "until".split()
    )
)
GENERIC_TERMS = frozenset(analyze(" ".join(GENERIC)))  # as the index spells them ("said": "sai")

# -- tuning ----------------------------------------------------------------------------------
# Intervals that a late-interaction search (kbmem.index.late) of the request in the voice of the
# person it is about ranks into the pool, among that person's turns. Deeper than the other
# searches: it finds the turn that answers a list question in passing ("kickboxing" for "What
# martial arts has John done?"), often below the turns that echo the question's words. On
# the example knowledge base, also searching the request as asked that way crowded out turns
# that answer the request's other parts.
LATE_K = 30
CORRECTION_WEIGHT = 2.0  # a correcting statement's fact weighs this much more
NAME_BRIDGES = 1  # names are noisier bridges than first-person relations
MAX_COVER_SEARCHES = 3  # searches for words of the request the evidence lacks, per step
COMMON_SHARE = 0.15  # a term in more than this share of intervals says little
MAX_KEY_FACTS = 5  # key facts a briefing lists: the few that lead, each quoted short
FACT_TOKENS = 40  # a key fact's quote: one sentence, or its clauses on the request


def is_name(text: str) -> bool:
    """Whether ``text`` is one capitalized name or phrase and nothing else ("Dara Whitcombe",
    "Bank of Scotland"), as ``entities`` finds them."""
    return _ENTITY.fullmatch(text.strip()) is not None


def entities(text: str) -> list[str]:
    """Capitalized names and phrases (question words and sentence openers dropped)."""
    out: dict[str, None] = {}
    for m in _ENTITY.finditer(text):
        words = [w for w in m.group(0).split() if w.lower() not in QUESTION_WORDS | _NOT_NAMES]
        while words and words[0].lower() in STOPWORDS:
            words.pop(0)  # a capitalized opener ("In which town ..."), not part of a name
        phrase = " ".join(words).strip(" .'’")
        if phrase and phrase.lower() not in QUESTION_WORDS and len(phrase) > 1:
            out.setdefault(phrase, None)
    for m in _QUOTED.finditer(text):
        out.setdefault(m.group(1), None)
    for m in _NUMBER.finditer(text):
        out.setdefault(m.group(0), None)
    return list(out)


def spelled(terms: list[str], text: str) -> list[str]:
    """The terms as ``text`` spells them ("compani" as "company"). Stemming is not idempotent
    ("endorsement" -> "endors" -> "endor"): a search built from stems looks for other terms
    than the text's, and the trace, the audit and a model read words, not stems."""
    words: dict[str, str] = {}
    for word in _WORD.findall(text):
        for term in analyze(word):
            words.setdefault(term, word.strip("'’-"))
    return [words.get(t, t) for t in terms]


def content_terms(text: str) -> list[str]:
    """The text's terms as the index spells them, question words dropped before stemming
    (so that "was" does not survive as "wa")."""
    words = [w for w in _WORD.findall(text) if w.lower() not in QUESTION_WORDS]
    return [t for t in analyze(" ".join(words)) if t not in QUESTION_WORDS]


def request_parts(request: str) -> list[tuple[str, set[str]]]:
    """Each thing a request asks, as it says it and by its content terms (names aside: a
    search for a word names them anyway, and a speaker's name heads each of their turns);
    one part for a request that asks one thing. "Who maintains the tide-window scheduler and
    when is the offsite?" asks who maintains the scheduler ("maintain", "tide", "window",
    "schedul") and when the offsite is ("offsit")."""
    named = set(analyze(" ".join(entities(request))))
    parts = []
    for text in _REQUEST_PARTS.split(request):
        terms = set(content_terms(text)) - named - GENERIC_TERMS
        if terms:
            parts.append((text.strip(), terms))
    return parts


def asked_with(parts: list[tuple[str, set[str]]], word: str) -> list[str]:
    """The other terms of the part (of the request's ``parts``, see request_parts) that asks
    ``word``: the evidence holds the word as asked where it holds one of them too (see
    holds_as_asked)."""
    terms = set(analyze(word))
    for _text, part in parts:
        if terms <= part:
            return sorted(part - terms)
    return []


def speaking(names: list[str], speakers: list[str]) -> list[str]:
    """The ``names`` that name someone who speaks in memory: the whole of a speaker's name
    or one of its words ("Maya" for Maya Lindqvist)."""
    words = {w.lower() for sp in speakers if sp != CHAT_AGENT for w in [sp, *sp.split()]}
    return [n for n in names if n.lower() in words]


def request_actions(toolkit: Toolkit, request: str, k: int) -> list[PlanAction]:
    """The searches every plan starts from, whichever engine plans: the request as asked, by
    keyword and by meaning, and for a request about a person who speaks in memory, what that
    person would have said about it, among their own turns, by meaning and word by word (late
    interaction, see LATE_K)."""
    actions = [
        PlanAction("bm25", request, k=k, note="the request as asked"),
        PlanAction("dense", request, k=k, note="paraphrases of the request"),
    ]
    view = toolkit.voiced(request)
    if view is not None:
        said = f"what {view.speaker} would have said about it, among their own turns"
        actions += [
            PlanAction("dense", view.text, k=k, note=said, speaker=view.speaker),
            PlanAction(
                "late", view.text, k=LATE_K, note=f"{said}, word by word", speaker=view.speaker
            ),
        ]
    return actions


def standing_sentences(sentences: list[str]) -> list[str]:
    """The sentences that still stand: a retraction ("That's wrong.") withdraws what the
    speaker said since the statement before it that announced the correction."""
    out: list[str] = []
    for sentence in sentences:
        if _RETRACTS.match(sentence):
            while out and not _CORRECTS.search(out[-1]):
                out.pop()
            continue
        out.append(sentence)
    return out


def states_correction(sentences: list[str]) -> bool:
    """Whether a statement corrects an earlier one (see _CORRECTS)."""
    return any(_CORRECTS.search(x) for x in sentences)


def stated_values(text: str) -> set[str]:
    """The values ``text`` gives (see _VALUE), normalized: "April 14th" -> "14 april"."""
    out = set()
    for m in _VALUE.finditer(text):
        month = (m.group(1) or m.group(3) or "").lower()
        out.add(f"{m.group(2)} {month}".strip())
    return out


def replaced_in(sentence: str) -> tuple[str, set[str]]:
    """The sentence without what it says is replaced ("not 14 April", "instead of 6,500",
    "I said 14 April, but ..."), and the values of those parts."""
    values: set[str] = set()
    spans: list[tuple[int, int]] = []
    for pattern in (_REPLACED, _I_SAID):
        for m in pattern.finditer(sentence):
            values |= stated_values(m.group(1))
            spans.append(m.span(1))
    # Only the words that say what was replaced go: the same value said again elsewhere in
    # the sentence states something else ("…, not 14 April; 14 April is the Expo preview").
    rest, end = [], 0
    for start, stop in sorted(spans):
        rest.append(sentence[end : max(start, end)])
        end = max(end, stop)
    rest.append(sentence[end:])
    return " ".join(rest) if spans else sentence, values


def changed_in(sentence: str) -> tuple[str, str, bool] | None:
    """What a change ``sentence`` tells (see _CHANGED): what no longer holds ("" when it is
    not named), what holds now, and whether it speaks of a decision told before it ("that
    decision was reversed in favour of Y"); None when it tells no change."""
    m = _CHANGED.search(sentence)
    if not m:
        return None
    groups = m.groupdict()
    old = groups["a"] or groups["c"] or groups["e"] or ""
    new = groups["b"] or groups["d"] or groups["f"] or groups["g"] or ""
    back = not old and bool(_POINTS_BACK.search(sentence[: m.start()]))
    return old.strip(), new.strip(), back


def changed_claim(sentence: str) -> str:
    """What a change ``sentence`` still claims: the sentence without what it says was
    replaced, up to what holds now ("I moved from Glasgow to Inverness last week" -> "I
    moved to Inverness"; "that decision was reversed in favour of PostgreSQL, because ..." ->
    "that decision was reversed in favour of PostgreSQL"); the sentence if it tells none."""
    m = _CHANGED.search(sentence)
    if not m:
        return sentence
    for old, new in (("a", "b"), ("c", "d"), ("e", "f"), ("", "g")):
        if m.group(new) is None:
            continue
        if old and m.group(old) is not None:
            # "from X to Y" -> "to Y"; "replaced X with Y" -> "replaced with Y"; "X was
            # replaced by Y" -> "replaced by Y".
            start = m.start(old) if old != "a" else m.start(old) - len("from ")
            return sentence[:start] + sentence[m.end(old) + 1 : m.end(new)]
        return sentence[: m.end(new)]
    return sentence


@dataclass(frozen=True)
class Correction:
    """What a correcting statement replaced: ``values`` (see stated_values), said of
    ``terms`` (the words of the sentences that gave them), at ``when``."""

    when: str
    values: frozenset[str]
    terms: frozenset[str]


@dataclass(frozen=True)
class Statement:
    """A turn's or a paragraph's sentences, read once for corrections: those that still
    stand (see standing_sentences), whether it corrects an earlier statement (see
    states_correction), ``correction``, what a correcting statement replaced (or None), and
    ``agreed``, the values it says were replaced whether or not it is a correction ("not 14
    April as stated", or said before "That's wrong."): a later correction of those values
    agrees with it rather than superseding it.

    What a correction replaces: the values after "not" (up to "as stated"), "instead of" or
    "rather than", those "I said" gave ("I said 14 April, but it's 21 April"), and those of
    the sentences its retraction withdraws, less the values it still gives itself. "The
    launch is Tuesday 21 April 2026, not Tuesday 14 April 2026 as stated" replaces "14 april"
    (2026 still stands), said of "launch"."""

    sentences: tuple[str, ...]
    standing: tuple[str, ...]
    corrects: bool
    correction: Correction | None
    agreed: frozenset[str]


def statement(sentences: list[str], when: str = "") -> Statement:
    """The statement ``sentences`` make, said at ``when`` (see Statement)."""
    standing = standing_sentences(sentences)
    withdrawn = [x for x in sentences if x not in standing]
    replaced = {v for x in withdrawn for v in stated_values(x)}
    kept: set[str] = set()
    about = list(withdrawn)
    for sentence in standing:
        rest, gone = replaced_in(sentence)
        replaced |= gone
        if rest != sentence:
            about.append(sentence)
        kept |= stated_values(rest)
    corrects = states_correction(sentences)
    correction = None
    if corrects and (values := replaced - kept):
        terms = set(analyze(" ".join(about))) - GENERIC_TERMS - set(analyze(" ".join(values)))
        correction = Correction(when, frozenset(values), frozenset(terms))
    return Statement(tuple(sentences), tuple(standing), corrects, correction, frozenset(replaced))


def superseded_on(
    text: str, when: str, corrections: list[Correction], agreed: frozenset[str] = frozenset()
) -> str:
    """The day of the first correction made after ``when`` that replaced a value ``text``
    gives, of something ``text`` speaks of, or "" (an undated text cannot be placed before a
    correction; "the Expo opens on 14 April" is not superseded by a correction of the launch
    date from 14 to 21 April). ``agreed``: values that the statement ``text`` comes from
    itself replaced; a later correction of the same values agrees with it."""
    return replaced_since(text, when, corrections, agreed)[0]


def replaced_since(
    text: str, when: str, corrections: list[Correction], agreed: frozenset[str] = frozenset()
) -> tuple[str, frozenset[str]]:
    """What later corrections replaced of ``text`` (see superseded_on): the day of the first,
    and the values they replaced ("", {} if none did)."""
    if not when:
        return "", frozenset()
    # "The launch is 21 April, not 14 April" does not state 14 April.
    values = stated_values(replaced_in(text)[0]) - agreed
    terms = term_set(text)
    later = [c for c in corrections if c.when > when and values & c.values and terms & c.terms]
    if not later:
        return "", frozenset()
    return min(c.when for c in later)[:10], frozenset(v for c in later for v in values & c.values)


def lead_draft(sources: list[Source], first: int = 1) -> str:
    """Where the key facts come from, for a reader who reads the summary first: "Key fact 1
    is the strongest match (Priya Raghunathan, 2026-02-23); it corrects an earlier
    statement, so prefer it to earlier ones. Key facts 4 and 5 were superseded by a later
    correction. The key facts date from 2026-01-05 to 2026-02-23." ``sources``: each key
    fact's source, in the order of the facts; ``first``: the number of the first of them (2
    when the direct answer leads the key facts)."""
    if not sources:
        return ""
    lead = sources[0]
    where = ", ".join(x for x in (lead.hit.speaker, lead.hit.timestamp[:10]) if x)
    draft = f"Key fact {first} is the strongest match ({where or lead.hit.page_id})"
    if lead.corrects:
        draft += "; it corrects an earlier statement, so prefer it to earlier ones"
    draft += "."
    old = [str(n) for n, source in enumerate(sources, start=first) if source.superseded]
    if old:
        which = old[0] if len(old) == 1 else ", ".join(old[:-1]) + " and " + old[-1]
        draft += (
            f" Key fact{'s' if len(old) > 1 else ''} {which} "
            f"{'were' if len(old) > 1 else 'was'} superseded by a later correction."
        )
    days = sorted({s.hit.timestamp[:10] for s in sources if s.hit.timestamp})
    if len(days) > 1:
        draft += f" The key facts date from {days[0]} to {days[-1]}."
    return draft


class OfflineEngine:
    name = "offline"

    def __init__(self, toolkit: Toolkit, k: int = 10):
        self.toolkit = toolkit
        self.k = k

    # -- helpers ----------------------------------------------------------------------------

    def said(self, hit: Hit) -> str:
        """What an interval says (its first ``READ_CHARS`` characters, cut at a word: the
        cost of a request must not grow with the size of one turn); see ``_said``."""
        text = self._said(hit)
        if len(text) <= READ_CHARS:
            return text
        cut = text.rfind(" ", READ_CHARS // 2, READ_CHARS)
        return text[: cut if cut > 0 else READ_CHARS] + " …"

    def _said(self, hit: Hit) -> str:
        """What an interval says: a turn without its speaker; a note's paragraph as written,
        without the title and section that the index puts before it, without heading lines
        (a heading is neither a fact to report nor a name to follow), its wrapped lines
        joined (a sentence is not cut where the text was wrapped)."""
        iv = hit.interval
        if hit.speaker:
            if not hit.excerpt.endswith(" …") or not iv.commit:
                return hit.excerpt.split(": ", 1)[-1]
            # A hit carries the start of a long turn only (see kbmem.index.tenant.EXCERPT_CHARS);
            # what the turn says further on is read from the page.
            lines = self._lines(hit)
            return "\n".join(unescape_line(x) for x in lines if not TURN_HEADER.match(x))
        if iv.kind != "paragraph" or not iv.commit:
            return hit.excerpt
        lines = self._lines(hit)
        out: list[list[str]] = []  # each output line as the lines it joins
        size = 0
        for line in lines:
            if HEADING.match(line):
                continue
            joins = out and (len(out[-1]) > 1 or out[-1][0].strip())
            if joins and line.strip() and not _LIST_ITEM.match(line):
                out[-1].append(line.strip())  # a line wrapped in the middle of a sentence
            else:
                out.append([line])
            size += len(out[-1][-1]) + 1  # the joined text's length, and its separator
            if size > READ_CHARS + 1:
                break  # said() keeps READ_CHARS of it and marks the cut: read no further
        return "\n".join(" ".join(parts) for parts in out)

    def _lines(self, hit: Hit) -> list[str]:
        """The hit's interval's lines, as committed."""
        iv = hit.interval
        return self.toolkit.file_text(iv.path, iv.commit).split("\n")[iv.start - 1 : iv.end]

    def read(
        self, ranked: list[Candidate]
    ) -> tuple[list[tuple[Candidate, Statement]], list[Correction]]:
        """Each candidate's statement (its sentences, see said), and the corrections they
        make (echoes repeat corrections without making them)."""
        read = []
        for cand in ranked:
            sentences = split_sentences(self.said(cand.hit), cut="pieces")
            read.append((cand, statement(sentences, cand.hit.timestamp)))
        corrections = [st.correction for cand, st in read if not cand.echo and st.correction]
        return read, corrections

    def term_shares(self, terms: list[str]) -> dict[str, float]:
        stats = self.toolkit.term_stats(terms)
        total = max(stats.pop("__total__", 1), 1)
        return {t: stats.get(t, 0) / total for t in terms}

    # -- plan -------------------------------------------------------------------------------

    def plan(
        self, request: str, memory: list[tuple[str, str, str]], state: ResearchState
    ) -> list[PlanAction]:
        actions = request_actions(self.toolkit, request, self.k)
        terms = content_terms(request)
        shares = self.term_shares(terms)
        # The request's rarest terms that memory holds at all (a relative choice: an absolute
        # threshold fails on small knowledge bases).
        # Plain words stay (GENERIC_TERMS are not left out of this search): "first" and
        # "last" matter in "when did she first ...".
        present = sorted((shares[t], t) for t in terms if shares.get(t, 0) > 0)
        rare = [t for share, t in present[:3] if share <= COMMON_SHARE]
        names = entities(request)
        named = set(analyze(" ".join(names)))
        rare_words = spelled([t for t in rare if t not in named], request)
        focus = " ".join(dict.fromkeys(names + rare_words))
        if focus and analyze(focus) != analyze(request):
            actions.append(
                PlanAction("bm25", focus, k=self.k, note="the request's names and rare terms")
            )
        spoken = speaking(names, self.toolkit.index.speakers())
        if spoken:
            # Every turn of someone who speaks is headed by their name, so a search for a
            # name they bear finds their own short turns ("Maya Lindqvist: Summary, please.")
            # before what is said OF them; a note names them where it says who they are or
            # what they do. The names are searched among the notes too.
            actions.append(
                PlanAction(
                    "bm25",
                    " ".join(spoken),
                    k=self.k,
                    interval_kind="paragraph",
                    note="what the notes say of the people the request names",
                )
            )
        dated = sessions_in(date_windows(request), memory)
        state.focus_sessions = set(dated)
        dated_pages = [p for sid in dated for p in self.toolkit.session_pages(sid)]
        if dated_pages:
            actions.append(
                PlanAction(
                    "page_id",
                    request,
                    page_ids=dated_pages[:8],
                    k=self.k,
                    note="sessions held on the dates the request names",
                )
            )
        sessions = [
            s
            for s in self.memo_sessions(request, memory, rare, names)
            if s not in state.focus_sessions
        ]
        if sessions:
            page_ids = [p for sid in sessions for p in self.toolkit.session_pages(sid)]
            if page_ids:
                actions.append(
                    PlanAction(
                        "page_id",
                        request,
                        page_ids=page_ids[:4],
                        k=self.k,
                        note="pages of sessions whose memo names the request's rare terms",
                    )
                )
        return actions

    def memo_sessions(
        self, request: str, memory: list[tuple[str, str, str]], rare: list[str], names: list[str]
    ) -> list[str]:
        wanted = set(rare) | {t for n in names for t in analyze(n)}
        if not wanted:
            return []
        scored = []
        for _date, sid, memo in memory:
            hits = wanted & term_set(memo)
            if len(hits) >= 2 or (len(wanted) == 1 and hits):
                scored.append((len(hits), sid))
        scored.sort(reverse=True)
        return [sid for _n, sid in scored[:2]]

    # -- integrate --------------------------------------------------------------------------

    def integrate(self, request: str, state: ResearchState) -> IntegrationState:
        """Key facts: of each of the best intervals, the sentence that carries the most of
        the request's weight (a rare term weighs more than a common one); the facts ordered
        by that weight times their interval's standing (its score over the best one's), so
        that a sentence sharing many words with the request but sitting in a weak interval
        does not lead (asked which vessels Skerrick operates, a remark on Calloway's vessels
        and the operator config did).

        A statement that corrects an earlier one weighs CORRECTION_WEIGHT times more, and of
        its sentences, those it withdraws are not facts: asked when the public launch is,
        the kickoff's 14 April must not lead when a later meeting corrected it to 21 April.
        An earlier statement of a value that a later correction replaced ("Public launch date
        as stated today: Tuesday 14 April") is marked as superseded: it stays, as the history
        of the fact. The draft says where the lead fact comes from, which facts were
        superseded and what dates the facts span, rather than repeating the fact."""
        terms = content_terms(request)
        shares = self.term_shares(terms)
        weight = {t: math.log(1.0 + 1.0 / max(shares.get(t, 0.0), 1e-4)) for t in terms}
        ranked = state.ranked()
        pages = list(dict.fromkeys(c.hit.page_id for c in ranked[:12]))
        # Echoes (kbmem's earlier answers and the questions put to it) repeat their sources,
        # which are the facts to cite, and quote corrections without making them; an echo
        # is a source only when memory holds nothing else.
        ranked = [c for c in ranked if not c.echo][:12] or ranked[:12]
        best_interval = max((state.effective(c) for c in ranked), default=0.0) or 1.0
        read, corrections = self.read(ranked)  # (a correction counts wherever it was made)
        citable = {id(c) for c in state.citable(ranked)}
        asked = _Asked(terms, weight, answer_type(request))
        scored: list[tuple[float, int, str, Source]] = []
        for rank, (cand, said) in enumerate(read):
            if id(cand) not in citable:
                continue
            fact = _key_fact(cand, said, asked, corrections)
            if fact is None:
                continue
            text, source, best_score = fact
            standing = state.effective(cand) / best_interval
            if source.corrects:
                standing *= CORRECTION_WEIGHT
            scored.append((-best_score * standing, rank, text, source))
        facts: list[str] = []
        sources: list[Source] = []
        for _score, _rank, fact_text, source in sorted(scored, key=lambda x: x[:2]):
            if fact_text not in facts and len(facts) < MAX_KEY_FACTS:
                facts.append(fact_text)
                sources.append(source)
        draft = lead_draft(sources)
        return IntegrationState(
            draft, facts, list(state.integration.open_questions), pages, fact_sources=sources
        )

    # -- reflect ----------------------------------------------------------------------------

    def reflect(self, request: str, state: ResearchState) -> ReflectionDecision:
        """Done when the best evidence holds the request's telling words and points nowhere
        new; otherwise the follow-up searches: one per word not covered yet, and one per
        name or relation the evidence introduced (see bridges)."""
        top = state.ranked()[:8]
        if not top:
            return ReflectionDecision(
                True, "nothing in memory matches the request", reason="no evidence at all"
            )
        covering = [state.candidates[k] for k in state.covering.values() if k in state.candidates]
        texts = [cand.hit.excerpt for cand in top + covering]
        # Judged by the words as memory holds them: "schedular" is covered where "scheduler"
        # is (see kbmem.research.reading). Searches still name the request's own entities.
        reading = state.reading or Reading(request)
        missing, with_ = self._uncovered(reading.text, texts)
        several = len(request_parts(reading.text)) > 1
        follow: list[PlanAction] = []
        names = [n for n in entities(request)]
        # One search per missing word: together, the rarest word's hits would rank first and
        # the others' would hardly count ("maintains offsite" found who maintains what, and
        # none of the offsite). A search already made is dropped by the researcher.
        # In a request that asks several things, what each search finds first that holds its
        # word as asked stands for that part of the request (see ResearchState.cover).
        for word in missing[:MAX_COVER_SEARCHES]:
            query = " ".join(dict.fromkeys([*names, word]))
            follow.append(
                PlanAction(
                    "bm25",
                    query,
                    k=self.k,
                    note=f"a term not covered yet: {reading.typed(word)}",
                    covers=word if several else "",
                    covers_with=with_[word],
                )
            )
        for bridge, source in self.bridges(request, top[:4], state):
            follow.append(
                PlanAction("bm25", bridge, k=self.k, note=f"follow '{bridge}'", follows=source)
            )
            state.followed.add(bridge.lower())
        if not follow:
            return ReflectionDecision(True, reason="the evidence covers the request's terms")
        return _follow_up(follow, missing, reading)

    def _uncovered(self, judged: str, texts: list[str]) -> tuple[list[str], dict[str, list[str]]]:
        """The words of request ``judged`` that tell something (rare in memory, not generic)
        that none of ``texts`` holds as asked, each once; and for each word, the words it is
        asked with. In a request that asks several things, a term counts as covered where
        the evidence holds it as the request asks it (see holds_as_asked): "maintained by the
        office" does not cover "maintains" in "who maintains the tide-window scheduler and
        when is the offsite?". In a request that asks one thing, anywhere (the stricter test
        there searched for more words, and cost evidence turns)."""
        terms = content_terms(judged)
        shares = self.term_shares(terms)
        parts = request_parts(judged)
        several = len(parts) > 1
        words = spelled(terms, judged)
        with_ = {w: asked_with(parts, w) if several else [] for w in words}
        missing = [
            word
            for t, word in zip(terms, words, strict=True)
            if t not in GENERIC_TERMS
            and 0 < shares.get(t, 0) <= COMMON_SHARE
            and not any(holds_as_asked(text, word, with_[word]) for text in texts)
        ]
        return list(dict.fromkeys(missing)), with_

    def bridges(
        self, request: str, top: list[Candidate], state: ResearchState
    ) -> list[tuple[str, str]]:
        """Things the best evidence points to elsewhere, read from the sentences that share a
        term with the request (and the sentence after each): a name the request does not
        mention ("Niamh"), or a relation said in the first person ("my sister", said by
        Dara, becomes "Dara sister"); each with the key of the interval that said it."""
        request_terms = set(content_terms(request))
        request_lower = request.lower()
        relations: dict[str, str] = {}
        names: dict[str, str] = {}
        for cand in top:
            hit = cand.hit
            text = self.said(hit)
            first = hit.speaker.split()[0] if hit.speaker else ""
            # As cut, unstripped: a name is read from a sentence without its first character.
            sentences = [text[a:b] for a, b in sentence_spans(text, cut="pieces")]
            relevant: list[str] = []
            for i, sentence in enumerate(sentences):
                if request_terms & term_set(sentence):
                    relevant += sentences[i : i + 2]
            for sentence in dict.fromkeys(relevant):
                for m in _MY_NOUN.finditer(sentence):
                    noun = m.group(1).lower()
                    if noun not in RELATIONS or set(analyze(noun)) <= request_terms:
                        continue
                    relations.setdefault(f"{first} {noun}".strip(), hit.interval.key)
                for name in entities(sentence[1:]):
                    if (
                        name.lower() not in request_lower
                        and not any(ch.isdigit() for ch in name)
                        and not set(name.lower().split()) <= GENERIC
                        and name != first
                    ):
                        names.setdefault(name, hit.interval.key)
        candidates = {**relations, **dict(list(names.items())[:NAME_BRIDGES])}
        fresh = [(b, key) for b, key in candidates.items() if b.lower() not in state.followed]
        return fresh[:2]


class _Asked(NamedTuple):
    """What key facts are weighed against: the request's content terms, each one's weight
    (rarer weighs more), and the kind of answer it asks for."""

    terms: list[str]
    weight: dict[str, float]
    expected: str | None


def _key_fact(
    cand: Candidate, said: Statement, asked: _Asked, corrections: list[Correction]
) -> tuple[str, Source, float] | None:
    """The key fact of one interval: its standing sentence that carries the most of the
    request's weight, quoted with who said it, when, whether a later correction superseded
    it, and its citation; with its source and that weight. None when no sentence counts."""
    hit = cand.hit
    best, best_score = "", 0.0
    for sentence in said.standing:
        if sentence.endswith("?"):
            continue  # a question states nothing
        # Sorted: a float sum in set order would vary with the process's hash seed.
        score = sum(asked.weight[t] for t in sorted(term_set(sentence)) if t in asked.weight)
        score *= merit(sentence, asked.terms, asked.expected)
        if score > best_score:
            best, best_score = sentence, score
    if not best:
        return None
    superseded = superseded_on(best, hit.timestamp, corrections, said.agreed)
    when = ", ".join(
        x for x in (hit.timestamp[:10], superseded and f"superseded on {superseded}") if x
    )
    who = f"{hit.speaker}: " if hit.speaker else ""
    text = focused(_LIST_ITEM.sub("", best), set(asked.terms), FACT_TOKENS)  # "- " of an item
    fact = f"{who}{text}{f' ({when})' if when else ''} {hit.interval.citation()}"
    # A turn corrects as a whole; a note's paragraph holds many facts, and one of them
    # correcting a value does not make the others corrections.
    corrects = not cand.echo and said.corrects and (bool(hit.speaker) or states_correction([best]))
    return fact, Source(hit, corrects, superseded), best_score


def _follow_up(
    follow: list[PlanAction], missing: list[str], reading: Reading
) -> ReflectionDecision:
    """Reflection's decision to search on: ``follow``, and what is missing as the
    briefing's open questions say it ("Not found in the evidence: the words ..."): the
    words themselves, which memory may hold in others."""
    if missing:
        typed = [reading.typed(w) for w in missing]
        missing_info = "the words " + ", ".join(f"'{w}'" for w in typed)
        reason = f"not yet covered: {', '.join(typed)}"
    else:
        missing_info = "what the names and relations in the evidence lead to"
        reason = "following entities the evidence introduced"
    return ReflectionDecision(False, missing_info, follow, reason=reason, missing_words=missing)


def focused(text: str, terms: set[str], limit: int) -> str:
    """``text`` cut to ``limit`` tokens around what it says of ``terms``: a long summary
    sentence of clauses set apart by semicolons ("Actions: facts page …; offsite details to
    the team this week, Dara; …") keeps its label and the clauses that hold the terms, "…"
    marking what is left out. Otherwise cut at its end, as truncate_tokens does."""
    if count_tokens(text) <= limit:
        return text
    clauses = CLAUSE_BREAK.split(text)
    hits = [len(terms & term_set(c)) for c in clauses]
    best = max(range(len(clauses)), key=lambda i: (hits[i], -i))
    if len(clauses) < 2 or not hits[best] or best == 0:
        return truncate_tokens(text, limit)
    label = _LABEL.match(text)
    head = label.group(0) if label else ""
    room = limit - count_tokens(head) - 2  # and the "…" on either side
    hi = best
    used = count_tokens(clauses[best])
    for j in range(best + 1, len(clauses)):  # what follows: it says more of the same
        if used + count_tokens(clauses[j]) > room:
            break
        used, hi = used + count_tokens(clauses[j]), j
    part = truncate_tokens(" ".join(clauses[best : hi + 1]), room)
    tail = " …" if hi < len(clauses) - 1 and not part.endswith("…") else ""
    return f"{head}… {part}{tail}"
