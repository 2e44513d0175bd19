"""The researcher's data model (after the Summit design note): plans, search results,
the running integration state, reflection decisions, the briefing and the trace."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from kbmem.dates import SaidDate, said_dates
from kbmem.index.intervals import Interval
from kbmem.index.tenant import Hit

PlanTool = Literal["bm25", "dense", "late", "page_id"]
PLAN_TOOLS = ("bm25", "dense", "late", "page_id")


@dataclass
class PlanAction:
    tool: str  # bm25 | dense | late (kbmem.index.late) | page_id
    query: str | None = None
    page_ids: list[str] = field(default_factory=list)
    k: int = 10
    note: str = ""
    # For a follow-up that resolves a reference in the evidence ("the city where my sister
    # lives"): the key of the interval that made the reference. What it finds first inherits
    # part of that interval's standing.
    follows: str = ""
    # Search only the turns of this speaker (a request about one person, asked in their
    # voice: see perspective).
    speaker: str = ""
    # Search only intervals of this kind ("paragraph": the notes; see kbmem.index.intervals).
    interval_kind: str = ""
    # For a follow-up that looks for a word of the request that the evidence lacks: the best
    # hit that holds the word, and one of ``covers_with`` (the other terms of the part of the
    # request that asks it, if any), stands for it in the evidence (see ResearchState.cover).
    covers: str = ""
    covers_with: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tool": self.tool, "k": self.k}
        if self.query is not None:
            data["query"] = self.query
        if self.page_ids:
            data["pageIds"] = list(self.page_ids)
        if self.note:
            data["note"] = self.note
        if self.follows:
            data["follows"] = self.follows
        if self.speaker:
            data["speaker"] = self.speaker
        if self.interval_kind:
            data["intervalKind"] = self.interval_kind
        if self.covers:
            data["covers"] = self.covers
        if self.covers_with:
            data["coversWith"] = list(self.covers_with)
        return data


@dataclass
class EvidenceItem:
    page_id: str
    excerpt: str
    relevance_score: float
    retriever_type: str
    interval: Interval
    session_id: str = ""
    # The interval's lines as committed (the excerpt may render them compactly); for callers
    # that map text back to file lines. Not part of the briefing's JSON.
    source_text: str = ""
    # The excerpt carries part of the interval (a long turn, see briefing._trimmed), "…"
    # marking what it leaves out.
    partial: bool = False

    @property
    def shown(self) -> str:
        """What a reader of the briefing is shown of the interval when that is only part of
        it (the excerpt), else "" (all of it)."""
        return self.excerpt if self.partial else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pageId": self.page_id,
            "sessionId": self.session_id,
            "excerpt": self.excerpt,
            "relevanceScore": round(float(self.relevance_score), 6),
            "retrieverType": self.retriever_type,
            "partial": self.partial,
            "interval": {
                "path": self.interval.path,
                "start": self.interval.start,
                "end": self.interval.end,
                "commit": self.interval.commit,
                "blob": self.interval.blob,
                "turnIds": list(self.interval.turn_ids),
            },
        }


@dataclass
class Said:
    """A sentence of memory: its text, who said it, on which day, where it stands (the
    evidence item and its turn's lines) and the sentence said just before it."""

    text: str
    speaker: str
    day: date | None
    item: EvidenceItem
    start: int
    end: int
    before: str = ""
    session: str = ""
    # Whether it opens a turn that replies to a question (the turn before ends asking).
    replies: bool = False
    # What the sentence still claims: without what it says is replaced ("21 April, not 14
    # April as stated"); set when it is read for a question.
    claim: str = ""
    # What was said before it in its turn, after the sentence said before the turn: where a
    # day said alone ("the 14th") takes its month from (kbmem.dates.said_dates).
    earlier: str = ""

    @property
    def context(self) -> str:
        """What was said before it that its words may lean on: its turn's earlier sentences
        (and the one before the turn), else the sentence said just before it."""
        return self.earlier or self.before

    def dates(self) -> list[SaidDate]:
        """The times it speaks of (what it still claims), resolved against the day it was said
        and what was said before it (kbmem.dates.said_dates): the one way a sentence of
        memory is read for dates."""
        return said_dates(self.claim or self.text, self.day, self.context)

    def citation(self) -> str:
        """``[page-id:Lx-Ly]`` of the turn or paragraph that holds it."""
        return f"[{self.item.page_id}:L{self.start}-L{self.end}]"


@dataclass
class DirectAnswer:
    """The direct answer to a question (kbmem.research.direct): the line, the sentences it
    was taken from (best first), whether memory says it firmly, and the kind of answer the
    question asks for (kbmem.research.answer_types.question_kind)."""

    line: str
    sources: list[Said]
    firm: bool
    kind: str
    # The evidence's sentences that answer the question, best first (the one ranking the
    # quotes under the line are taken from as well).
    ranked: list[Said] = field(default_factory=list)

    def fact(self) -> str:
        """The answer as the briefing's first key fact, cited; "" when memory gives none."""
        if not self.sources:
            return ""
        return f"{DIRECT_HEAD} {self.line} {self.sources[0].item.interval.citation()}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.line,
            "kind": self.kind,
            "firm": self.firm,
            "citations": [s.item.interval.citation() for s in self.sources],
        }


DIRECT_HEAD = "Direct answer:"  # how the direct answer leads the key facts


@dataclass(frozen=True)
class Source:
    """Where a key fact comes from: its interval, whether it states a correction, and the day
    of the later correction that superseded it ("" if none did)."""

    hit: Hit
    corrects: bool = False
    superseded: str = ""


@dataclass
class IntegrationState:
    briefing_draft: str = ""
    key_facts: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    used_pages: list[str] = field(default_factory=list)
    # Each key fact's source, when the engine knows them (the offline engine): the summary
    # is then written again once it is known whether the direct answer leads the facts.
    fact_sources: list[Source] = field(default_factory=list)


@dataclass
class ReflectionDecision:
    done: bool
    missing_info: str | None = None
    follow_up: list[PlanAction] = field(default_factory=list)
    reason: str = ""
    # The request's words that the evidence did not hold, when that is what is missing: the
    # briefing names only those its evidence, as finally chosen, still lacks.
    missing_words: list[str] = field(default_factory=list)


@dataclass
class TraceEvent:
    """One step of a research run, for live display (TUI) and provenance."""

    kind: str  # plan | tool_call | tool_result | integrate | reflect | fallback | error | done
    step: int
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "step": self.step, "at": round(self.at, 3), **self.data}


@dataclass
class BriefingContext:
    executive_summary: str
    key_facts: list[str]
    open_questions: list[str]
    evidence: list[EvidenceItem]
    tokens_used: int
    reflection_steps: int
    pages_used: list[str]
    request: str = ""
    tenant_id: str = ""
    engine: str = "offline"
    trace: list[TraceEvent] = field(default_factory=list)
    partial: bool = False
    # Which commit the index reflects and how far behind HEAD it is
    # (kbmem.index.freshness.IndexStatus.as_dict); None when no index was read.
    index: dict[str, Any] | None = None
    cut_short: bool = False  # the time budget ran out: the briefing holds what was found by then
    # The direct answer to the request, computed once by the researcher (None for a
    # statement); shown as the first key fact when memory gives one (see shown_facts).
    answer: DirectAnswer | None = None

    def shown_facts(self) -> list[str]:
        """The key facts as a reader sees them: the direct answer first, when memory gives
        one, then the researched facts (which the summary numbers from 2 then)."""
        lead = self.answer.fact() if self.answer else ""
        return [lead, *self.key_facts] if lead else list(self.key_facts)

    def to_dict(self, with_trace: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "request": self.request,
            "tenantId": self.tenant_id,
            "engine": self.engine,
            "executiveSummary": self.executive_summary,
            "keyFacts": self.shown_facts(),
            "answer": self.answer.to_dict() if self.answer else None,
            "openQuestions": list(self.open_questions),
            "evidence": [e.to_dict() for e in self.evidence],
            "tokensUsed": self.tokens_used,
            "reflectionSteps": self.reflection_steps,
            "pagesUsed": list(self.pages_used),
            "partial": self.partial,
            "cutShort": self.cut_short,
            "index": self.index,
        }
        if with_trace:
            data["trace"] = [t.to_dict() for t in self.trace]
        return data
