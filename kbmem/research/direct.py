"""The direct answer to a question: one short line of the kind the question asks for, taken
from what memory says (the briefing's evidence), never made up.

The question is typed (kbmem.research.answer_types.question_kind); the evidence is read
sentence by sentence with who said it and on which day (kbmem.research.said); the sentences
are ranked for the question (kbmem.research.ranking), and the extractor of the kind asked
(EXTRACTORS, in the modules kbmem.research.extract lists) takes the answer out of the best
of them. When no sentence covers the question well the line says the evidence is weak; when
none covers it at all the answer is "Memory does not say". The researcher computes it once
per request and the briefing carries it (BriefingContext.answer)."""

from __future__ import annotations

import re
from collections.abc import Callable

from kbmem.research.answer_types import CLAUSE_ASKED, question_kind, without_form_note
from kbmem.research.counts import count, number
from kbmem.research.extract import FIRM_SHARE, Extracted
from kbmem.research.joint import said_by_both, shared_thing
from kbmem.research.lists import listed
from kbmem.research.ranking import Ranking, gives
from kbmem.research.said import STOP, read_sentences
from kbmem.research.spans import RECURRING, phrase_after, stem_set
from kbmem.research.types import DirectAnswer, EvidenceItem, Said
from kbmem.research.what import thing
from kbmem.research.when import asked_event, asks_saying, date, duration
from kbmem.research.where import place
from kbmem.research.who import names, person
from kbmem.research.yesno import choice, options_said, yesno

NOTHING = "Memory does not say."
# Kinds whose line is one phrase cut from one sentence, in its speaker's words.
OWNED_KINDS = frozenset({"thing", "place"})
WEAK = "(weak evidence)"
# Kinds whose answer may be a thing two people share ("What animal do both X and Y like?").
SHARED_KINDS = frozenset({"thing", "list"})
# Kinds whose answer has a form the best sentence's other words cannot give: asked "who",
# "how long" or "how many", the words after the question's ("works again - what a relief",
# "since we") name no one, no time, no number. Memory does not say it.
FORMED_KINDS = frozenset({"person", "names", "duration", "number", "count", "date"})
# The extractor of each kind of answer (kbmem.research.answer_types.question_kind), each in
# the module of its family (see kbmem.research.extract).
EXTRACTORS: dict[str, Callable[[Ranking], Extracted]] = {
    "date": date,
    "duration": duration,
    "number": number,
    "count": count,
    "person": person,
    "names": names,
    "place": place,
    "yesno": yesno,
    "list": listed,
    "choice": choice,
    "thing": thing,
}


def direct_answer(question: str, evidence: list[EvidenceItem]) -> DirectAnswer:
    """The direct answer to ``question`` from ``evidence`` (see the module's docstring)."""
    question = without_form_note(question)
    sentences = read_sentences(evidence)
    kind = question_kind(question)
    if not sentences:
        return DirectAnswer(NOTHING, [], False, kind)
    ranking = Ranking(question, sentences)
    if not ranking.ranked:
        # Asked to choose for someone, what they say of the options is quoted (see
        # yesno.options_said): memory does not say which, but it holds something.
        said = options_said(ranking) if kind == "choice" else []
        return DirectAnswer(NOTHING, said, False, kind)
    ranked = [s for _score, _share, s in ranking.ranked]
    # Asked what thing two people share, the item both say (kbmem.research.joint).
    shared = shared_thing(ranking) if kind in SHARED_KINDS else None
    line, sources = shared or EXTRACTORS[kind](ranking)
    if kind == "thing":
        line = said_by_both(ranking, line, sources)
        line = quantifier_dropped(line)
        line = echo_lead_dropped(line, question)
    # Asked "how" or "why", the clause's "my" reads with its "I": no phrase is re-owned.
    if kind in OWNED_KINDS and not CLAUSE_ASKED.match(question):
        line = owner_named(line, sources)
    # Firm when the best sentence says enough of the question and a sentence the answer was
    # taken from gives the kind asked (a place named through "the city where my sister
    # lives" is given by the sentence that names it). A count made by counting is given by
    # its sentences together, each one of what was counted. Asked when something was said,
    # a sentence saying it gives its own day.
    firm = bool(line) and (
        (
            ranking.ranked[0][1] >= FIRM_SHARE
            and (
                kind == "count"
                or any(gives(kind, s) for s in sources)
                or (kind == "date" and asks_saying(question))
                or (kind == "date" and bool(RECURRING.fullmatch(line)))  # when a habit recurs
            )
        )
        or (kind == "date" and dates_asked_event(question, sources))
    )
    if not line and kind == "choice":
        # Neither option offered is said (or both as much): memory does not say which, but
        # what it holds on the question is still quoted, so the reply does not claim it
        # holds nothing; the words after the question's would answer no choice.
        return DirectAnswer(NOTHING, ranking.near(), False, kind, ranked)
    if not line and kind not in FORMED_KINDS:
        # Nothing of the kind asked: the words of the best sentence after the question's.
        best = ranking.best()
        line, sources = phrase_after(best.claim, ranking.weigher.terms), [best]
        firm = False
    if not line:
        return DirectAnswer(NOTHING, [], False, kind, ranked)
    line = bounded(line)
    return DirectAnswer(line if firm else f"{line} {WEAK}", sources, firm, kind, ranked)


# The most characters the line holds before its weak tag: it opens the reply as one short
# line, and the quotes under it give the sentences whole.
LINE_CHARS = 200


def bounded(line: str) -> str:
    """``line`` cut to LINE_CHARS at the last word that fits, "…" marking the cut: a reason
    or phrase taken from a very long sentence (a pasted text, a turn with no full stop)
    would otherwise make the line the whole sentence. A single word longer than that is cut
    where the bound falls."""
    if len(line) <= LINE_CHARS:
        return line
    head = line[: LINE_CHARS - 1]
    cut = head.rsplit(" ", 1)[0] if " " in head.strip() else head
    return cut.rstrip(" ,;:") + "…"


# A quantifying determiner that opens a noun phrase ("another movie script", "a few bits"):
# it says how many or that there is one more, not what the thing is.
_QUANTIFIER = re.compile(r"^(?:another|a\s+few|few)\s+(?=[a-z][\w'’-]*)", re.I)


def quantifier_dropped(line: str) -> str:
    """``line`` (a "what" answer, a noun phrase) without a leading quantifying determiner,
    which answers no "what"; unchanged when nothing else would be left."""
    rest = _QUANTIFIER.sub("", line, count=1)
    return rest if rest.strip() else line


def echo_lead_dropped(line: str, question: str) -> str:
    """``line`` (a "what" answer) without a lead that only repeats the question's words and
    is set off by a comma ("my prized possession, a basketball signed by my favorite
    player" asked "what does Tim have that is his prized possession"): the question already
    names the thing by those words, and the appositive after the comma says what it is."""
    head, comma, rest = line.partition(", ")
    if not comma or not rest.strip():
        return line
    words = [w for w in re.findall(r"[\w'’-]+", head.lower()) if w not in STOP]
    if words and stem_set(" ".join(words)) <= stem_set(question):
        return rest
    return line


def dates_asked_event(question: str, sources: list[Said]) -> bool:
    """Whether a sentence the date was taken from says the event asked and a time: "When
    did X go to a fair to get more exposure for the studio?" is answered firmly by
    "Yesterday, I went to a fair to show off my studio", though it says less than half of
    the question's words, which describe the event more than they name it. A sentence telling
    the event as just done dates it by the day it was told ("I just launched …": around that
    day). The event is the question's verb, or the noun a light verb carries ("a car
    accident": the accident)."""
    event = asked_event(question)
    return bool(event) and any(
        (gives("date", s) or tells_news(s.claim or s.text)) and event & stem_set(s.claim or s.text)
        for s in sources
    )


# The event told as just done: "I just launched …", "I've just got …", "I have developed …".
# English tells news in these forms, of what happened on the day it is told or shortly
# before; the simple past ("I launched a campaign") also recalls what happened long ago. A
# wish or a liking ("I just wanted to say …", "I've always loved …") tells no event.
_WISH = r"(?!(?:wanted|needed|hoped|wished|meant|liked|loved)\b)"
_NEWS = re.compile(
    rf"\bjust\s+(?:got\s+|been\s+)?(?:{_WISH}[a-z]+ed|got|had|made|won|bought|began|sold|met|"
    r"took|went|came|found|finished|started|became|gave|did|ran|wrote|passed)\b"
    rf"|\b(?:I|we)(?:['’]ve|\s+have)\s+(?:just\s+|finally\s+)?{_WISH}[a-z]+ed\b",
    re.I,
)


def tells_news(text: str) -> bool:
    """Whether ``text`` tells an event as just done, so that the day it was said dates it
    (an answer "around" that day, see kbmem.research.when.date)."""
    return bool(_NEWS.search(text))


_SPEAKER_VOICE = re.compile(r"\b(?:I|me|myself|I'm|I've|I'd|I'll)(?![\w'’])")


def owner_named(line: str, sources: list[Said]) -> str:
    """``line`` with "my" said as whose it is, when it was cut from one sentence: read out of
    its turn, "my slipper" is the speaker's ("Melanie's slipper"), not the reader's. A clause
    in the speaker's voice ("I lost my keys") keeps its "my", which reads with its "I"."""
    if len(sources) != 1 or not sources[0].speaker or _SPEAKER_VOICE.search(line):
        return line
    owner = sources[0].speaker.split()[0]
    return re.sub(r"\b[Mm]y\b", f"{owner}'s", line)
