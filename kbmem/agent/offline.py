"""The offline agent: deterministic, no network. It calls ``research`` and answers from the
briefing: the few evidence sentences that share the most of the question's rare words, each
with the citation of the turn or paragraph it comes from, and it says plainly when memory
holds nothing on the question. A message that states rather than asks (a note, a pasted log)
is acknowledged, with what memory already says on it. A statement that corrects an earlier one
comes before it, as in the briefing's key facts, and an earlier statement of a value that a
later one corrected says so."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import NamedTuple

from kbmem.agent.context import TurnContext
from kbmem.agent.records import ContextItem
from kbmem.dates import stamp_day, written_date
from kbmem.index.tenant import analyze
from kbmem.memorize.sessions import is_chat, is_own_answer, is_request, is_statement, without_cue
from kbmem.research.answer_types import answer_type, gives, merit, question_kind
from kbmem.research.direct import NOTHING as NOT_SAID
from kbmem.research.offline import (
    CORRECTION_WEIGHT,
    QUESTION_WORDS,
    Correction,
    Statement,
    focused,
    is_name,
    request_parts,
    statement,
    superseded_on,
)
from kbmem.research.reading import read_request
from kbmem.research.said import STOP, asks, points_back, says_nothing
from kbmem.research.types import BriefingContext, DirectAnswer, EvidenceItem, Said
from kbmem.store.pages import TURN_HEADER, unescape_line
from kbmem.textutil import count_tokens, split_sentences, truncate_tokens

MAX_SENTENCES = 3  # an answer quotes the few best sentences, not the briefing
# The quotes that support the direct answer are short: the answer is the first line.
QUOTE_TOKENS = 30
MAX_SOURCES = 3  # of the sentences the direct answer was taken from, those quoted
# The quotes under the direct answer take about this many tokens (their citations and who
# said them included): the sentences the answer must show come first, whatever they take,
# and the others while they fit (see quotation).
QUOTE_BUDGET = 100
# Quotes of turns this close in one passage (at most this many turns between them) share one
# citation (see quotation).
RUN_REACH = 2
# The most words of a reply's opening that is only a reaction ("I was really excited."),
# its detail left to the next sentence (see _with_detail).
REACTION_WORDS = 8
# "The offsite will be in the city where my sister lives": the answer is where the sister
# lives, said elsewhere. A sentence that resolves such a reference must name at least this
# many of its terms (the person whose relation it is, the relation, a name given for them).
BRIDGE_TERMS = 2
MAX_SENTENCE_TOKENS = 60  # a quoted sentence is cut here, around the question's words
MIN_SAME_CHARS = 20  # a shorter sentence is not taken for the start of another
NOTHING = "Memory holds nothing on this question."
ANSWER_HEAD = "From memory:"
# A statement (a note, a correction, a pasted log) is no question to answer: memory takes it
# in when the chat's turns are committed, and what memory already says on it is shown.
NOTED = "Noted: memory keeps what is said in this chat once its turns are committed."
RELATED_HEAD = "Memory already says:"
# A sentence must carry this share of the question's weight (rare words weigh more) to count;
# to be shown as what memory already says on a statement, this share of the statement's.
MIN_COVERAGE = 0.3
STATEMENT_COVERAGE = 0.5
# Of one part of a question that asks several things, the share a sentence must cover to
# answer that part alone: "leave this room" does not say where the flights leave from.
PART_COVERAGE = 0.6
# Words that shape a question ("how much", "how long") without saying what it is about.
MODIFIERS = frozenset(["much", "many", "long", "often", "far", "old", "take", "place", "happen"])
SUPERSEDED_WEIGHT = 0.5  # a sentence giving a value that a later correction replaced
# A sentence that gives the kind of answer asked for takes the question's terms from one of
# the CONTEXT_REACH sentences before it in its turn, at CONTEXT_SHARE of their weight for each
# sentence between, and shows it (cut to CONTEXT_TOKENS) before itself.
CONTEXT_REACH = 2
CONTEXT_SHARE = 0.8
CONTEXT_TOKENS = 30
PLACE_CREDIT = 0.5  # share of a term's weight when only the session or page name has it
_CITED = re.compile(r"\s*\[[A-Za-z0-9][A-Za-z0-9._/-]*:L\d+-L\d+\]")
_HEADING = re.compile(r"^#{1,6}\s")
# Characters that Markdown would read as markup in a quoted sentence (emphasis, code, links,
# HTML, tables, headings): the answer is Markdown, and a quote must show as it was said.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|#~])")
_ESCAPED = re.compile(r"\\([\\`*_\[\]<>|#~])")  # what markdown_literal escaped
# kbmem's own earlier answer that memory held nothing, or that it noted a statement: never
# evidence of anything.
_NOTHING_SAID = re.compile(r"^(?:Memory holds nothing|(?:Memory|It) never mentions|Noted:)")
_BOLD_LEAD = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?\*\*([^*\n]{1,80})\*\*")


@dataclass
class Sentence:
    text: str
    speaker: str
    item: EvidenceItem
    start: int  # file lines of the turn or paragraph that holds it
    end: int
    terms: frozenset[str]
    order: int
    stamp: str = ""  # when its turn was said (ISO 8601), "" for a note's paragraph


class Unit(NamedTuple):
    """A turn (session pages) or a paragraph (notes) of an evidence item; line numbers are the
    file's; ``stamp``: when a turn was said ("" for a paragraph)."""

    speaker: str
    start: int
    end: int
    body: list[str]
    stamp: str = ""


def _units(item: EvidenceItem) -> list[Unit]:
    """The turns or paragraphs of an evidence item."""
    lines = (item.source_text or item.excerpt).split("\n")
    base = item.interval.start
    units: list[Unit] = []
    current: tuple[str, int, list[str], str] | None = None
    is_turns = any(TURN_HEADER.match(line) for line in lines)

    def close(end: int) -> None:
        nonlocal current
        if current is not None:
            speaker, start, body, stamp = current
            while body and not body[-1].strip():
                body.pop()
            if body:
                end = start + len(body) - (0 if is_turns else 1)
                units.append(Unit(speaker, start, end, body, stamp))
        current = None

    for n, line in enumerate(lines):
        number = base + n
        header = TURN_HEADER.match(line)
        if header:
            close(number - 1)
            current = (header.group(2), number, [], header.group(3))
        elif is_turns:
            if current is not None:
                current[2].append(unescape_line(line))
        elif not line.strip() or _HEADING.match(line):
            close(number - 1)
        else:
            if current is None:
                current = ("", number, [], "")
            current[2].append(line)
    close(base + len(lines) - 1)
    return units


def paragraph_subject(body: list[str]) -> str:
    """What a note's paragraph is about when it opens with it in bold (``**Tobias
    Ferrante**, Senior Backend Engineer. Owns …``, a glossary entry, a list item's lead):
    later sentences of the paragraph often leave it out. Empty when it does not."""
    if not body:
        return ""
    found = _BOLD_LEAD.match(body[0])
    return found.group(1).strip(" :,.") if found else ""


def question_terms(question: str) -> list[str]:
    """The question's content terms as the index spells them (question words dropped before
    stemming, so that "was" does not survive as "wa")."""
    words = [w for w in re.findall(r"[\w'’-]+", question) if w.lower() not in QUESTION_WORDS]
    return analyze(" ".join(w for w in words if w.lower() not in MODIFIERS))


def _place_terms(item: EvidenceItem) -> set[str]:
    """Terms of where a passage sits (session and page names): a sentence in the session
    "datastore-decision" is about the datastore even when it does not say so."""
    return set(analyze(re.sub(r"[-_/.]+", " ", f"{item.session_id} {item.page_id}")))


class OfflineAgent:
    name = "offline"

    def run(self, ctx: TurnContext) -> None:
        result = ctx.tools.call(ctx, "research", {"request": ctx.message}, origin="agent")
        ctx.check_cancel()
        briefing = result.briefing
        if briefing is None:
            ctx.note(f"research failed: {result.error}")
            ctx.status, ctx.error = "failed", result.error
            self._stream(ctx, f"I could not search memory: {result.error}")
            return
        ctx.note(
            f"Researched the question: {len(briefing.evidence)} evidence passage(s) from "
            f"pages {', '.join(briefing.pages_used) or 'none'}."
        )
        stated = is_statement(ctx.message)
        reading = self.read(ctx, briefing, stated)
        chosen = reading.chosen
        asked = without_cue(ctx.message)
        # Asked when, a reader needs when it was said: "yesterday" on 8 May is 7 May.
        dated = answer_type(asked) == "time"
        # The researcher's direct answer, as it leads the briefing's key facts.
        direct = briefing.answer or DirectAnswer(NOT_SAID, [], False, question_kind(asked))
        # Memory holds something on the question when a sentence covers enough of its words
        # or the direct answer was taken from one.
        answered = not stated and (bool(chosen) or bool(direct.sources))
        quoted = chosen
        if answered:
            quoted = quotation(direct, reading, set(question_terms(asked)), dated)
        # What the turn read: the lines the answer quotes, cited, then everything else the
        # briefing gave the agent (an audit shows all that it read before it answered).
        for sentence in quoted:
            ctx.add_context(_cited(sentence, result.call_id))
        for item in result.items:
            ctx.add_context(item)
        if stated:
            ctx.note("The message states rather than asks: noted, with what memory says on it.")
            self._stream(
                ctx, NOTED + ("\n\n" + self._quotes(chosen, RELATED_HEAD) if chosen else "")
            )
            return
        if not answered:
            ctx.note("No evidence sentence covers enough of the question's content words.")
            unknown = self.unknown_words(ctx)
            extra = (
                f" It never mentions: {markdown_literal(', '.join(unknown))}." if unknown else ""
            )
            self._stream(ctx, NOTHING + extra)
            return
        ctx.note(f"Direct answer ({direct.kind}): {direct.line}")
        text = markdown_literal(direct.line) + "\n\n" + self._quotes(quoted, ANSWER_HEAD, dated)
        unknown = self.unknown_words(ctx)
        if unknown:
            text += f"\n\nMemory never mentions: {markdown_literal(', '.join(unknown))}."
        self._stream(ctx, text)

    @staticmethod
    def _quotes(chosen: list[Sentence], head: str, dated: bool = False) -> str:
        """``head``, then each sentence as a quoted bullet with its citation; ``dated``: with
        the day its turn was said, where memory knows it."""
        return "\n".join([head, *(_quote_line(sentence, dated) for sentence in chosen)])

    @staticmethod
    def unknown_words(ctx: TurnContext) -> list[str]:
        """The question's content words that no interval of memory contains, in the order
        asked; one that the keyword search read as a near word memory does hold (a
        misspelling, see kbmem.research.reading) says so, or the reader would take the
        answer for a miss."""
        asked = without_cue(ctx.message)
        reading = read_request(ctx.tools.toolkit, asked, QUESTION_WORDS | MODIFIERS)
        words = reading.unknown + [
            f"{w} (searched as the nearest word it holds)" for w in reading.near
        ]
        return sorted(words, key=lambda w: asked.find(w.split(" (", 1)[0]))

    def select(
        self, ctx: TurnContext, briefing: BriefingContext, stated: bool = False
    ) -> list[Sentence]:
        """The evidence sentences that best cover the question's content words, rarer words
        counting more; at most one sentence per turn, in order of merit. A question that asks
        several things gets, for each part no sentence answers yet, the best sentence that
        covers PART_COVERAGE of that part, in place of one whose part another answers too.
        Questions are never answers, and kbmem's own earlier answers count less than the
        sources they quoted. Empty when no sentence covers enough of the question (memory
        holds nothing on it). ``stated``: the message is a statement, and a sentence says
        something on it when it covers more of it, and two of its words at least ("What a
        day!" is on nothing)."""
        return self.read(ctx, briefing, stated).chosen

    def read(self, ctx: TurnContext, briefing: BriefingContext, stated: bool = False) -> Reading:
        """The evidence as ``select`` reads it: what it chooses, and how it reads each
        sentence (see Reading)."""
        question = _Question.weigh(ctx, briefing, stated)
        if question is None:
            return Reading([], [], [], [])
        selection = _Selection(question, briefing)
        selection.read()
        candidates = sorted(selection.candidates, key=lambda c: (-c[0], c[1]))
        ranked = [sentence for _score, _order, sentence in candidates]
        if ranked and not stated and briefing.answer is not None:
            # The one ranking of the briefing's sentences (kbmem.research.ranking), as the
            # direct answer took its line from it; the agent's reading of the sentences
            # only says whether memory holds anything on the question, and how to show them.
            ranked = in_ranking_order(briefing.answer.ranked, ranked)
        best = _best_sentences(ranked)
        pool = [sentence for _terms, _order, sentence in selection.pool]
        parted = _answer_parts(list(best), ranked, question.parts)
        chosen = resolve_references(parted, selection.pool, briefing)
        # Beyond the best sentences: one for a part of the question they leave out, and one
        # that resolves a reference, shown after the sentence that makes it.
        added = [
            s
            for n, s in enumerate(chosen)
            if not any(s is b for b in best)
            or (n + 1 < len(chosen) and not any(chosen[n + 1] is p for p in parted))
        ]
        return Reading(chosen, added, ranked, pool)

    @staticmethod
    def _stream(ctx: TurnContext, text: str, words: int = 6) -> None:
        """Stream ``text`` a few words at a time (whitespace kept exactly)."""
        pieces = re.findall(r"\S+\s*|\s+", text)
        for n in range(0, len(pieces), words):
            ctx.check_cancel()
            ctx.reply("".join(pieces[n : n + words]))


@dataclass
class Reading:
    """How the agent reads the evidence for a question: the sentences it ``chosen`` (see
    OfflineAgent.select), those of them ``added`` for a part of the question or a reference
    that the best sentences leave out, its ``candidates`` (the sentences that cover enough
    of the question, best first, each led by the sentence that gives its subject where it
    needs one) and its ``pool`` (every sentence, with the subject of its paragraph)."""

    chosen: list[Sentence]
    added: list[Sentence]
    candidates: list[Sentence]
    pool: list[Sentence]

    def of(self, said: Said) -> Sentence | None:
        """``said`` as the agent reads it: as the candidate of its turn or paragraph that
        quotes it, or as the pool has it (with the sentence before it, if it points back to
        it); None when the agent does not read it as a statement (a question, a request put
        to kbmem, kbmem's own word that memory held nothing)."""
        unit = (said.item.interval.path, said.start)
        read = _quoting(said.text, [p for p in self.pool if _unit_of(p) == unit])
        if read is None:
            return None
        if points_back(said.text):
            return _as_sentence(said)
        found = _quoting(said.text, [c for c in self.candidates if _unit_of(c) == unit])
        return found if found is not None else read


_SAYS_LITTLE = frozenset(analyze(" ".join(STOP)))
_QUOTED_SPEAKER = re.compile(r"^[^:\n]{1,80}: ")


@dataclass
class _Question:
    """What the evidence sentences are weighed against (see OfflineAgent.select): the
    question's terms that memory uses, each weighing more the rarer it is, and the parts of
    a question that asks several things, each with the kind of answer it asks for."""

    terms: list[str]
    weight: dict[str, float]
    stated: bool
    expected: str | None  # the kind of answer asked for ("when …?": a time)
    part_kinds: list[tuple[set[str], str | None]]

    @property
    def wanted(self) -> set[str]:
        return set(self.terms)

    @property
    def whole(self) -> float:
        return sum(self.weight.values())

    @property
    def parts(self) -> list[set[str]]:
        return [p for p, _kind in self.part_kinds]

    @property
    def kinds(self) -> set[str]:
        """The kinds of answer asked for, by any part."""
        if self.part_kinds:
            return {k for _p, k in self.part_kinds if k}
        return {self.expected} if self.expected else set()

    @classmethod
    def weigh(cls, ctx: TurnContext, briefing: BriefingContext, stated: bool) -> _Question | None:
        """The question of ``ctx``'s message; None when nothing in the evidence can cover it."""
        asked = without_cue(ctx.message)
        terms = question_terms(asked)
        expected = None if stated else answer_type(asked)
        if not terms or not briefing.evidence:
            return None
        stats = ctx.tools.toolkit.term_stats(terms)
        total = max(1, stats.pop("__total__", 1))
        # Words memory never uses cannot be covered: they are reported, not weighed.
        terms = [t for t in terms if stats.get(t, 0) > 0]
        if not terms:
            return None
        weight = {t: math.log(1 + total / (1 + stats[t])) for t in terms}
        # A question that asks several things ("Who maintains the tide-window scheduler and
        # when is the offsite?") is answered part by part: a sentence that covers enough of
        # one part is an answer, though the other part's words outweigh it.
        asks = [] if stated else request_parts(asked)
        part_kinds = [(p & set(terms), answer_type(text)) for text, p in asks]
        part_kinds = [(p, kind) for p, kind in part_kinds if p] if len(part_kinds) > 1 else []
        return cls(terms, weight, stated, expected, part_kinds)

    def weight_of(self, terms: frozenset[str] | set[str]) -> float:
        return sum(self.weight[t] for t in terms)

    def expected_of(self, found: frozenset[str]) -> str | None:
        """The kind of answer asked by the part that ``found`` says most of."""
        if not self.part_kinds:
            return self.expected
        _part, kind = max(self.part_kinds, key=lambda pk: self.weight_of(found & pk[0]))
        return kind

    def covers(self, covered: float, found: frozenset[str]) -> bool:
        """Whether a sentence that says ``found`` for ``covered`` weight says enough: of the
        whole question, or of one of its parts; and (on a statement) two of its words."""
        min_coverage, min_terms = (STATEMENT_COVERAGE, 2) if self.stated else (MIN_COVERAGE, 1)
        enough = covered >= min_coverage * self.whole or any(
            self.weight_of(found & part) >= PART_COVERAGE * self.weight_of(part)
            for part in self.parts
        )
        return enough and len(found) >= min_terms


# A sentence of a turn as _Selection reads it: its text, the question's terms it says (who
# said it counts), and its place among all the sentences read.
_Said = tuple[str, frozenset[str], int]


@dataclass
class _Selection:
    """The evidence read for a question, sentence by sentence: ``pool`` holds every sentence
    with its terms (for resolving references), ``candidates`` those that cover enough of the
    question, scored."""

    question: _Question
    briefing: BriefingContext
    pool: list[tuple[frozenset[str], int, Sentence]] = field(default_factory=list)
    candidates: list[tuple[float, int, Sentence]] = field(default_factory=list)
    order: int = 0  # sentences read so far, candidates or not

    def read(self) -> None:
        """Read every turn or paragraph of the evidence, each once as a statement."""
        units = [
            [
                (unit, statement(split_sentences("\n".join(unit.body), cut="prose"), unit.stamp))
                for unit in _units(item)
            ]
            for item in self.briefing.evidence
        ]
        corrections = [  # (kbmem's own answers only repeat corrections)
            st.correction
            for item, read in zip(self.briefing.evidence, units, strict=True)
            for unit, st in read
            if st.correction and not is_own_answer(item.session_id, unit.speaker)
        ]
        for rank, (item, read) in enumerate(zip(self.briefing.evidence, units, strict=True)):
            place = _place_terms(item) & self.question.wanted
            for unit, st in read:
                self._read_unit(rank, item, unit, st, place, corrections)

    def _read_unit(
        self,
        rank: int,
        item: EvidenceItem,
        unit: Unit,
        st: Statement,
        place: set[str],
        corrections: list[Correction],
    ) -> None:
        """One turn or paragraph: its sentences into the pool, those that answer into the
        candidates."""
        own = is_own_answer(item.session_id, unit.speaker)
        if not own and is_chat(item.session_id) and is_request("\n".join(unit.body)):
            return  # a request put to kbmem in a chat states nothing
        factor = 0.5 if own else 1.0
        said = st.sentences
        if st.corrects:
            # What memory holds now, before the statement it corrects; and not the
            # sentences that the correction withdraws ("... 14 April. That's wrong.").
            factor *= CORRECTION_WEIGHT
            said = st.standing
        read_out = self._sentences(item, unit, said, own)
        for text, found, at in read_out:
            scored = self._scored(text, found, at, read_out, rank, place, factor)
            if scored is None:
                continue
            text, found, score, room = scored
            superseded = superseded_on(text, unit.stamp, corrections, st.agreed)
            if superseded:
                # Still an answer to "what was said at the kickoff?", never before
                # the correction that replaced it.
                score *= SUPERSEDED_WEIGHT
            sentence = Sentence(
                focused(text, self.question.wanted, room)
                + (f" (superseded on {superseded})" if superseded else ""),
                unit.speaker,
                item,
                unit.start,
                unit.end,
                found,
                at,
                unit.stamp,
            )
            self.candidates.append((score, at, sentence))

    def _sentences(
        self, item: EvidenceItem, unit: Unit, said: Sequence[str], own: bool
    ) -> list[_Said]:
        """The unit's sentences that state something, each with the question's terms it says;
        every one goes into the pool."""
        wanted = self.question.wanted
        subject = "" if unit.speaker else paragraph_subject(unit.body)
        said_by = frozenset(analyze(unit.speaker or "")) & wanted
        read_out: list[_Said] = []
        for n, text in enumerate(said):
            self.order += 1
            text = _CITED.sub("", text).removeprefix(ANSWER_HEAD).strip()
            if own:
                text = _ESCAPED.sub(r"\1", text)  # quoted as said, not as marked up
            if text.endswith("?") or not text or (own and _NOTHING_SAID.match(text)):
                continue
            if n and subject and subject.lower() not in text.lower():
                # "Owns the sync service…" says whose only in the paragraph's lead.
                text = f"{subject} — {text}"
            said_terms = frozenset(analyze(text)) | frozenset(analyze(unit.speaker))
            sentence = Sentence(
                truncate_tokens(text, MAX_SENTENCE_TOKENS),
                unit.speaker,
                item,
                unit.start,
                unit.end,
                said_terms & wanted,
                self.order,
                unit.stamp,
            )
            self.pool.append((said_terms, self.order, sentence))
            # Who said it is part of what it tells: asked what Priya corrected,
            # Priya's own words cover "Priya" as much as a sentence naming her.
            read_out.append((text, frozenset(analyze(text)) & wanted | said_by, self.order))
        return read_out

    def _scored(
        self,
        text: str,
        found: frozenset[str],
        at: int,
        read_out: list[_Said],
        rank: int,
        place: set[str],
        factor: float,
    ) -> tuple[str, frozenset[str], float, int] | None:
        """A sentence of a unit as a candidate answer: its text (led by the sentence before
        it that gives its subject, if it needs one), its terms, its score and the tokens it
        may take; None when it does not cover enough of the question."""
        question = self.question
        room = MAX_SENTENCE_TOKENS
        covered = question.weight_of(found)
        typed = any(gives(kind, text) for kind in question.kinds)
        lead = _lead(read_out, found, at, question.weight) if typed else None
        if lead:
            # The answer a question asks for often leaves its subject to the
            # sentence before it: "I want to book a team offsite for the week
            # after it. Three days, Tuesday 28 to Thursday 30 April, …"
            other, other_found, other_at = lead
            share = CONTEXT_SHARE ** (at - other_at)
            covered += share * question.weight_of(other_found - found)
            found = found | other_found
            gap = " " if at - other_at == 1 else " … "
            text = (
                truncate_tokens(other, CONTEXT_TOKENS)
                + gap
                + focused(text, question.wanted, MAX_SENTENCE_TOKENS)
            )
            room += CONTEXT_TOKENS + 1
        covered += PLACE_CREDIT * question.weight_of(place - found)
        if not question.covers(covered, found):
            return None
        score = factor * covered + 0.3 / (1 + rank)
        if not question.stated:
            score *= merit(text, question.terms, question.expected_of(found))
        return text, found, score, room


def in_ranking_order(
    order: list[Said],
    candidates: list[Sentence],
) -> list[Sentence]:
    """The sentences of ``order`` (the direct answer's ranking, best first) as the agent
    shows them: the candidate of the same turn or paragraph that quotes it (led by the
    sentence that gives its subject, cut around the question's words); one that is no
    candidate (it covers too little of the question by the words memory uses) is left out.
    Then the candidates the ranking does not hold, in their own order."""
    by_unit: dict[tuple[str, int], list[Sentence]] = {}
    for sentence in candidates:
        by_unit.setdefault(_unit_of(sentence), []).append(sentence)
    out: list[Sentence] = []
    used: set[int] = set()
    for said in order:
        unit = (said.item.interval.path, said.start)
        found = _quoting(said.text, by_unit.get(unit, []))
        if found is not None and id(found) not in used:
            used.add(id(found))
            out.append(found)
    return out + [s for s in candidates if id(s) not in used]


def _quoting(text: str, sentences: list[Sentence]) -> Sentence | None:
    """The sentence of ``sentences`` that quotes ``text`` (whole, cut short, or led by
    another), or None."""
    words = text.split()
    head = " ".join(words[:4])
    for sentence in sentences:
        quoted = sentence.text
        if head and head in quoted:
            return sentence
        core = quoted.removesuffix("…").removeprefix("…").strip()
        if len(core) >= MIN_SAME_CHARS and core in text:
            return sentence
    return None


def quotation(
    direct: DirectAnswer, reading: Reading, asked: set[str], dated: bool = False
) -> list[Sentence]:
    """The quotes under the direct answer, a sentence each (as the agent reads it, see
    Reading.of): the sentence the direct answer was taken from, the agent's own best
    sentence, and those its reading added for a part of the question or a reference (see
    Reading), whatever they take; then, while they fit in QUOTE_BUDGET tokens, the other
    sentences the direct answer was taken from, the rest of its ranking and of the agent's
    choice, each only if it says something no quote before it says (``asked``: the
    question's terms, which say nothing new). A list's items said in different sessions
    are so quoted each in its own words, and a sentence that repeats another is not.
    Each is offered with the sentences next to it that say what it is asked about (see
    with_neighbours); one that only thanks or greets is never quoted. Sentences of one turn
    or paragraph are one quote, under one citation, and so are those of turns close together
    in one passage (see in_runs): such a sentence costs only its words. When the direct
    answer is weak, the ranking's sentences of its own passage come before the others (see
    same_passage)."""
    sources = [reading.of(s) for s in direct.sources[:MAX_SOURCES]]
    ranked = [reading.of(s) for s in direct.ranked]
    offered = [(s, n == 0) for n, s in enumerate(x for x in sources if x is not None)]
    offered += [(s, True) for s in reading.chosen[:1] + reading.added]
    in_order = [s for s in ranked if s is not None]
    one_passage = len({id(s.item) for s in direct.sources}) <= 1
    if offered and not direct.firm and not dated and one_passage:
        offered += [(s, False) for s in same_passage(offered[0][0], in_order)]
    offered += [(s, False) for s in in_order]
    offered += [(s, False) for s in reading.chosen]
    offered = with_neighbours(offered, reading.pool, dated)
    names = {s.speaker.split()[0].lower() for s in reading.pool if s.speaker.strip()}
    quotes: dict[tuple[str, int], list[Sentence]] = {}
    said: set[str] = set()
    firm: set[int] = set()  # the quotes that were forced
    used = 0
    for sentence, forced in offered:
        unit = _unit_of(sentence)
        if any(
            _same_quote(sentence, other)
            or _within(sentence.text, other.text)
            or _within(other.text, sentence.text)
            for other in quotes.get(unit, [])
        ):
            continue  # (a sentence led by the one before it holds that one)
        if not forced and says_nothing(sentence.text, names):
            continue  # thanks, a greeting: nothing for a reader
        words = set(analyze(sentence.text))
        terms = words - asked - _SAYS_LITTLE
        if not forced and quotes and not terms - said:
            continue  # says nothing that an earlier quote does not
        # A turn's other sentences only where they speak of the question, or go on about
        # a forced quote by a pronoun (see goes_on; not when asked when: the days of other
        # sessions' quotes answer it, and they keep the room).
        own = [q for q in quotes.get(unit, []) if id(q) in firm]
        told_by_pronoun = not dated and goes_on(sentence, own)
        if not forced and unit in quotes and not words & asked and not told_by_pronoun:
            continue
        if unit in quotes:
            cost = count_tokens(sentence.text) + 2  # " … " within the turn's quote
        elif any(_near(sentence, others[0]) for others in quotes.values()):
            cost = count_tokens(_run_part(sentence, None, dated))  # a quote near it cites it
        else:
            cost = count_tokens(_quote_line(sentence, dated))
        if not forced and quotes and used + cost > QUOTE_BUDGET:
            continue  # a shorter sentence further down may still fit
        quotes.setdefault(unit, []).append(sentence)
        if forced:
            firm.add(id(sentence))
        said |= terms
        used += cost
    return in_runs([_joined(sentences) for sentences in quotes.values()], dated)


def goes_on(sentence: Sentence, quoted: list[Sentence]) -> bool:
    """Whether ``sentence`` is the next one of its turn after one of ``quoted`` and goes on
    about what that one spoke of (see with_neighbours): it speaks of what the question asks
    about by a pronoun ("She gave it to me when I was young, and it stands for love."),
    so it names none of the question's words though it says what was asked of it."""
    return _continues(sentence.text) and any(q.order + 1 == sentence.order for q in quoted)


def same_passage(first: Sentence, ranked: list[Sentence]) -> list[Sentence]:
    """The sentences of ``ranked`` (in its order) from the evidence passage ``first`` is
    quoted from. Offered next when the direct answer is weak: its sentence then matched the
    question's words without saying what was asked, but the passage it stands in is the
    one most about what was asked, and a conversation tells a thing over a few turns (the
    lead-in, the other's question, the reply), so the rest of the answer is more often said
    around it than in the passage the ranking puts next, which is about another occasion.
    Not when the question asks when: the days of quotes from other passages answer it; nor
    when the line was gathered from several passages (a list): the answer is spread out."""
    return [s for s in ranked if s.item is first.item]


def _near(a: Sentence, b: Sentence) -> bool:
    """Whether ``a`` and ``b`` are turns or paragraphs of one passage with at most RUN_REACH
    others between them."""
    if a.item.interval != b.item.interval:
        return False
    starts = [u.start for u in _units(a.item)]
    if a.start not in starts or b.start not in starts:
        return False
    return abs(starts.index(a.start) - starts.index(b.start)) <= RUN_REACH + 1


def _run_part(sentence: Sentence, before: Sentence | None, dated: bool) -> str:
    """How ``sentence`` goes on a quote of the same passage said before it (``before``; None:
    not known yet): after " … ", with who said it when another did, and the day when
    another."""
    said_on = stamp_day(sentence.stamp) if dated else None
    same_day = before is not None and stamp_day(before.stamp) == said_on
    day = f" ({written_date(said_on)})" if said_on and not same_day else ""
    same_speaker = before is not None and before.speaker == sentence.speaker
    who = f"{sentence.speaker}{day}: " if sentence.speaker and not same_speaker else ""
    return f" … {who}{sentence.text}"


def in_runs(quotes: list[Sentence], dated: bool = False) -> list[Sentence]:
    """``quotes``, those of turns close together in one passage (see _near) made one quote
    under one citation of the lines from the first to the last, in the order said ("Melanie:
    I ran a charity race … Caroline: That charity race sounds great!"): a citation costs a
    reader more words than most quoted sentences, and the lines between are as easy to
    check. The quote stands where the first of them stood."""
    runs: list[list[Sentence]] = []
    for sentence in quotes:
        run = next((r for r in runs if any(_near(sentence, s) for s in r)), None)
        if run is None:
            runs.append([sentence])
        else:
            run.append(sentence)
    return [_run_quote(sorted(run, key=lambda s: s.start), dated) for run in runs]


def _run_quote(run: list[Sentence], dated: bool) -> Sentence:
    """The quotes of ``run`` (in the order said) as one quote."""
    first = run[0]
    text = first.text + "".join(_run_part(s, before, dated) for before, s in pairwise(run))
    return replace(
        first,
        text=text,
        end=max(s.end for s in run),
        terms=frozenset().union(*(s.terms for s in run)),
    )


# Words that, opening a sentence, make it go on about what the sentence before it spoke of:
# "I really enjoy the upside-down poses. They make me feel free and light."
_CONTINUES = frozenset("it its they their them she her he his this that these those".split())


def _continues(text: str) -> bool:
    """Whether ``text`` opens with a word that refers back to the sentence before it."""
    first = re.match(r"[A-Za-z]+", text)
    return first is not None and first.group(0).lower() in _CONTINUES


def with_neighbours(
    offered: list[tuple[Sentence, bool]], pool: list[Sentence], dated: bool = False
) -> list[tuple[Sentence, bool]]:
    """``offered`` (sentences to quote, each with whether it must be), each followed by the
    next sentence of its turn or paragraph where that one goes on about the same thing
    ("They make me feel free and light." after "I really enjoy the upside-down poses."):
    what a sentence is asked about is often said of it in the next one, which names it
    only by a pronoun. And the first, the direct answer's, followed by what its speaker
    said next when the other asked about it ("We celebrated my daughter's birthday with a
    concert." "Who played?" "Thanks! It was Matt Patterson!"): in a conversation the detail
    asked for is often given when asked (after a short reaction, see _with_detail). Not
    when the question asks when: the days the quotes were said answer it, and a reply would
    crowd out one said on another day."""
    following = {(_unit_of(s), s.order): s for s in pool}
    names = {s.speaker.split()[0].lower() for s in pool if s.speaker.strip()}
    openings: dict[tuple[str, int], Sentence] = {}
    for s in pool:  # (the pool is in the order said)
        # A reply that opens with thanks ("Thanks, Maria!") says its piece after them, and
        # thanks are never quoted: its opening is its first sentence that says something.
        if not says_nothing(s.text, names):
            openings.setdefault(_unit_of(s), s)
    out: list[tuple[Sentence, bool]] = []
    for n, (sentence, forced) in enumerate(offered):
        out.append((sentence, forced))
        if n == 0 and not dated:
            reply = _reply_to_follow_up(sentence, openings)
            if reply is not None:
                out.append((_with_detail(reply, following), False))
        after = following.get((_unit_of(sentence), sentence.order + 1))
        if after is not None and _continues(after.text):
            out.append((after, False))
    return out


def _reply_to_follow_up(
    sentence: Sentence, openings: dict[tuple[str, int], Sentence]
) -> Sentence | None:
    """The opening sentence of the turn its speaker said after the other speaker's next
    turn, where that turn asks something (anywhere in it, see asks_anywhere); None when
    there is none in the evidence."""
    units = _units(sentence.item)
    at = next((n for n, u in enumerate(units) if u.start == sentence.start), None)
    if at is None or at + 2 >= len(units):
        return None
    question, answers = units[at + 1], units[at + 2]
    if not sentence.speaker or question.speaker == sentence.speaker:
        return None
    if answers.speaker != sentence.speaker or not asks_anywhere(question):
        return None
    return openings.get((sentence.item.interval.path, answers.start))


def asks_anywhere(turn: Unit) -> bool:
    """Whether ``turn`` asks something in any of its sentences, not only in its last: a
    person who asks and then goes on to their own news ("What concert was it? The advocacy
    event was a cool experience - so much love and support!") is still answered in the
    other's next turn, as people answer what they were asked before taking up the rest."""
    return any(asks(said) for said in split_sentences("\n".join(turn.body), cut="prose"))


def _with_detail(
    reply: Sentence, following: dict[tuple[tuple[str, int], int], Sentence]
) -> Sentence:
    """``reply`` (the opening of a reply to a follow-up question) and, when it is only a
    short reaction ("I was really excited.", "The kids loved it!"), the sentence after it in
    its turn, as one quote: asked how it felt or how it went, people react first and give
    the detail next ("It feels like the hard work paid off now that I'm an assistant
    manager"), and the reaction alone tells a reader little."""
    after = following.get((_unit_of(reply), reply.order + 1))
    if after is None or len(reply.text.split()) > REACTION_WORDS:
        return reply
    return replace(reply, text=f"{reply.text} {after.text}", terms=reply.terms | after.terms)


def _within(text: str, quoted: str) -> bool:
    """Whether ``quoted`` already holds ``text`` (cut short maybe) whole."""
    core = text.removesuffix("…").strip()
    return len(core) >= MIN_SAME_CHARS and core in quoted


def _joined(sentences: list[Sentence]) -> Sentence:
    """The sentences of one turn or paragraph as one quote, in the order they were said."""
    if len(sentences) == 1:
        return sentences[0]
    source = sentences[0].item.source_text or sentences[0].item.excerpt
    ordered = sorted(sentences, key=lambda s: _place_in(source, s.text))
    first = ordered[0]
    text = " … ".join(s.text.removesuffix(" …") for s in ordered)
    return replace(first, text=text, terms=frozenset().union(*(s.terms for s in ordered)))


def _place_in(source: str, text: str) -> int:
    """Where ``text`` (cut short maybe, or led by another sentence) starts in ``source``."""
    head = text.removeprefix("… ").split(" … ", 1)[0][:40]
    found = source.find(head)
    return found if found >= 0 else len(source)


def _quote_line(sentence: Sentence, dated: bool = False) -> str:
    """A quoted sentence as a bullet with its citation; ``dated``: with the day its turn was
    said, where memory knows it."""
    citation = f"[{sentence.item.page_id}:L{sentence.start}-L{sentence.end}]"
    said_on = stamp_day(sentence.stamp) if dated else None
    day = f" ({written_date(said_on)})" if said_on else ""
    who = f"{sentence.speaker}{day}: " if sentence.speaker else ""
    return f"- {markdown_literal(who + sentence.text)} {citation}"


def _as_sentence(said: Said) -> Sentence:
    stamp = said.day.isoformat() if said.day else ""
    text = truncate_tokens(said.text, QUOTE_TOKENS)
    if said.before and said.before != said.text and points_back(said.text):
        text = f"{truncate_tokens(said.before, CONTEXT_TOKENS)} {text}"
    return Sentence(text, said.speaker, said.item, said.start, said.end, frozenset(), 0, stamp)


def _cited(sentence: Sentence, call_id: str) -> ContextItem:
    """The context record of a quoted sentence."""
    return ContextItem(
        page_id=sentence.item.page_id,
        path=sentence.item.interval.path,
        start=sentence.start,
        end=sentence.end,
        commit=sentence.item.interval.commit,
        retriever=sentence.item.retriever_type,
        score=round(float(sentence.item.relevance_score), 6),
        blob=sentence.item.interval.blob,
        turn_ids=[t for t in sentence.item.interval.turn_ids if t in _turns_of(sentence)],
        call_id=call_id,
        cited=True,
        shown=sentence.item.shown,
    )


def _unit_of(sentence: Sentence) -> tuple[str, int]:
    return (sentence.item.interval.path, sentence.start)


def _best_sentences(ranked: list[Sentence]) -> list[Sentence]:
    """The first MAX_SENTENCES of ``ranked``, one per turn or paragraph, none repeating
    another's quote."""
    chosen: list[Sentence] = []
    for sentence in ranked:
        if any(_unit_of(s) == _unit_of(sentence) or _same_quote(s, sentence) for s in chosen):
            continue
        chosen.append(sentence)
        if len(chosen) == MAX_SENTENCES:
            break
    return chosen


def _answer_parts(
    chosen: list[Sentence], ranked: list[Sentence], parts: list[set[str]]
) -> list[Sentence]:
    """``chosen``, with for each part of the question that none of them answers the best
    sentence of ``ranked`` that does, in place of the weakest sentence whose parts another
    chosen one answers too."""
    seen_units = {_unit_of(s) for s in chosen}
    for part in parts:
        if any(s.terms & part for s in chosen):
            continue
        best = next(
            (
                sentence
                for sentence in ranked
                if sentence.terms & part
                and _unit_of(sentence) not in seen_units
                and not any(_same_quote(s, sentence) for s in chosen)
            ),
            None,
        )
        if best is None:
            continue
        seen_units.add(_unit_of(best))
        spare = [
            n
            for n, s in enumerate(chosen)
            if all(any(o.terms & p for o in chosen if o is not s) for p in parts if s.terms & p)
        ]
        if len(chosen) == MAX_SENTENCES and spare:
            del chosen[spare[-1]]
        chosen.append(best)
    return chosen


def _quote_forms(sentence: Sentence) -> set[str]:
    """A sentence's text as it may reappear in kbmem's own answer: cut off (" …") and, in an
    earlier answer's bullet, behind the name of whoever said it."""
    text = sentence.text.removesuffix("…").strip().lower()
    forms = {text}
    if is_own_answer(sentence.item.session_id, sentence.speaker):
        forms.add(_QUOTED_SPEAKER.sub("", text, count=1))
    return forms


def _same_quote(a: Sentence, b: Sentence) -> bool:
    """Whether two sentences say the same, one maybe cut shorter: a source, and the bullet of
    an earlier answer that quoted it."""
    return any(
        x.startswith(y) or y.startswith(x)
        for x in _quote_forms(a)
        for y in _quote_forms(b)
        if min(len(x), len(y)) >= MIN_SAME_CHARS or x == y
    )


def _lead(
    read: list[tuple[str, frozenset[str], int]],
    found: frozenset[str],
    at: int,
    weight: dict[str, float],
) -> tuple[str, frozenset[str], int] | None:
    """The sentence shortly before sentence ``at`` of a turn that says most of the question's
    terms that sentence does not (nearer first among equals), or None."""
    before = [r for r in read if at - CONTEXT_REACH <= r[2] < at and r[1] - found]
    if not before:
        return None
    return max(before, key=lambda r: (sum(weight[t] for t in r[1] - found), r[2]))


def _unit_key(sentence: Sentence) -> str:
    return f"{sentence.item.interval.path}#{sentence.start}-{sentence.end}"


def followed_references(briefing: BriefingContext) -> list[tuple[str, frozenset[str]]]:
    """The references the research followed (its trace's follow-up searches): the key of the
    interval that made each, and the terms searched for ("Dara sister" for Dara's "the city
    where my sister lives"). A name alone ("Priya", "Dara Whitcombe") is left out: a sentence
    that names her, or that she said, is not for that what her mention was about."""
    out = []
    for event in briefing.trace:
        if event.kind != "plan":
            continue
        for action in event.data.get("actions", []):
            query = action.get("query") or ""
            terms = frozenset(analyze(query))
            if is_name(query):
                continue  # "Dara Whitcombe" is one name, though two words
            if action.get("follows") and len(terms) >= BRIDGE_TERMS:
                out.append((action["follows"], terms))
    return out


def resolve_references(
    chosen: list[Sentence],
    pool: list[tuple[frozenset[str], int, Sentence]],
    briefing: BriefingContext,
) -> list[Sentence]:
    """``chosen``, and after the first of them that makes a reference the research followed,
    the evidence sentence that resolves it: one that says all the reference's terms (who
    said it counts), from a turn or paragraph not already quoted. Asked where the offsite
    will be, "in the city where my sister lives" (Dara) is followed by Dara's "I'm flying to
    Tromsø to see my sister Niamh": the answer is in the second sentence, not the first."""
    shown = {_unit_key(s) for s in chosen}
    references = followed_references(briefing)
    for n, sentence in enumerate(chosen):
        for source, terms in references:
            if source != _unit_key(sentence):
                continue
            found = [
                (order, other)
                for said, order, other in pool
                if terms <= said
                and _unit_key(other) not in shown
                # Saying something, not only being who spoke: asked where the offsite is,
                # the summary's "Dara Whitcombe" was resolved by Dara's "I do."
                and terms & set(analyze(other.text))
            ]
            if found:
                return [*chosen[: n + 1], min(found, key=lambda f: f[0])[1], *chosen[n + 1 :]]
    return chosen


def markdown_literal(text: str) -> str:
    """``text`` as Markdown that shows it as written: what Markdown would read as markup
    (``**``, backticks, ``[links]``, ``<b>``) is escaped with a backslash."""
    return _MARKDOWN.sub(r"\\\1", text)


def _turns_of(sentence: Sentence) -> set[str]:
    lines = (sentence.item.source_text or sentence.item.excerpt).split("\n")
    base = sentence.item.interval.start
    out = set()
    for number in range(sentence.start, sentence.end + 1):
        line = lines[number - base] if 0 <= number - base < len(lines) else ""
        m = TURN_HEADER.match(line)
        if m:
            out.add(m.group(1))
    return out


def best_excerpt(text: str, question: str, limit: int) -> str:
    """One line of ``text`` for a reader who asked ``question``: the sentence sharing the most
    of the question's terms (the first sentence when none does), with the words around it,
    cut to ``limit`` characters. An ellipsis marks text left out on either side."""
    sentences = split_sentences(text, cut="prose")
    if not sentences:
        return ""
    wanted = set(question_terms(question))
    best = 0
    if wanted:
        scores = [len(wanted & set(analyze(s))) for s in sentences]
        best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    lead = "… " if best else ""
    line = " ".join(sentences[best:])
    room = max(1, limit - len(lead))
    if len(line) > room:
        return lead + line[: room - 1].rstrip() + "…"
    return lead + line
