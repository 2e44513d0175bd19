"""The researcher (GAM's online half): plan → search (in parallel) → integrate → reflect,
until the request is covered or a budget ends; the output is a compact, cited briefing."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

from kbmem.config import HARD_CAPS, MAX_REQUEST_CHARS
from kbmem.errors import KbmemError, ModelUnreachable, ValidationError
from kbmem.index.tenant import Hit, analyze
from kbmem.index.vectors import read_queries
from kbmem.memorize.memorizer import read_memory
from kbmem.memorize.sessions import is_echo, is_statement, without_cue
from kbmem.research.answer_types import question_kind, without_form_note
from kbmem.research.briefing import fit_list, select_evidence
from kbmem.research.direct import direct_answer
from kbmem.research.offline import (
    QUESTION_WORDS,
    OfflineEngine,
    asked_with,
    lead_draft,
    request_parts,
)
from kbmem.research.reading import Reading, read_request
from kbmem.research.state import ResearchState, holds_as_asked
from kbmem.research.toolkit import Toolkit, rank_pages
from kbmem.research.types import (
    BriefingContext,
    DirectAnswer,
    PlanAction,
    ReflectionDecision,
    Source,
    TraceEvent,
)
from kbmem.store.repository import KnowledgeBase
from kbmem.telemetry import record_research
from kbmem.textutil import count_tokens, truncate_tokens

EventSink = Callable[[TraceEvent], None]

# -- tuning ----------------------------------------------------------------------------------
# How much a search's hits count, by tool: keyword and late-interaction hits fully, dense
# hits less (any query has nearest neighbours), a page's own intervals least.
ACTION_WEIGHT = {"bm25": 1.0, "dense": 0.6, "late": 1.0, "page_id": 0.5}
# Weights of the page votes: whole-page BM25 leads; the pages of the nearest intervals add
# what shares no words with the request (as Toolkit.pages weighs them).
PAGE_VOTE_WEIGHT = {"bm25": 1.0, "dense": 0.6}
# A follow-up search counts as any search for the intervals it finds, but does not vote on
# pages as a whole (page votes and extra weight for follow-ups pushed the request's own best
# pages out). A follow-up that resolves a reference made by an interval passes BRIDGE_SHARE
# of that interval's score to its BRIDGE_TOP best hits instead.
BRIDGE_TOP = 1  # besides the source itself, which holds the name it gave
BRIDGE_SHARE = 0.8
MAX_ACTIONS_PER_STEP = 8  # the request's own searches (up to 3) and up to 5 planned ones
PAGE_VOTES = 30  # pages a keyword search ranks as whole documents
DENSE_VOTE_DEPTH = 100  # nearest intervals whose pages a semantic search votes for
REPEAT_SLACK = 20  # extra hits fetched so that repeats dropped (see distinct) leave k others
READ_FROM = 20  # best intervals whose words show how memory writes a word read as a near one
# Nearest neighbours exist for any query; below this cosine similarity (all-MiniLM-L6-v2)
# they are unrelated text, and a briefing built on them would pretend memory knew something.
DENSE_FLOOR = 0.3
# ...unless none of the request's words occurs in memory at all: then a semantic match alone
# must be clearly near. A sentence has a vector of its own (see kbmem.index.vectors), and the
# fewer words a vector holds, the nearer chance brings it.
DENSE_ALONE_FLOOR = 0.4
# The same for late interaction (kbmem.index.late): nonsense is matched piece by piece to
# whatever word pieces come nearest, and reaches a fair score.
LATE_FLOOR = 0.3
LATE_ALONE_FLOOR = 0.5

# Questions whose answer is gathered across sessions ("What has X done?", "What are her
# pets' names?"): their briefing draws on GATHERED_PAGES times the pages of the setting
# research.max_pages (up to the hard cap), when the caller sets none. ("How many …?" too
# often asks one thing beside another: "Who owns the sync service and how many people are
# coming?" lost its first part's evidence to the offsite's.)
GATHERED = frozenset({"list", "names"})
GATHERED_PAGES = 1.5
MEANING_TOOLS = ("dense", "late")  # searches that need the model's reading of their query
_WORDS = re.compile(r"[^\W_]+")


@dataclass
class Budgets:
    max_pages: int = 8
    max_depth: int = 2
    max_tokens: int = 1500
    time_s: float = 60.0

    @classmethod
    def from_settings(
        cls,
        settings: Any,
        max_pages: int | None = None,
        max_depth: int | None = None,
        max_tokens: int | None = None,
        time_s: float | None = None,
    ) -> Budgets:
        section = settings.section("research")
        budgets = cls(
            section["max_pages"] if max_pages is None else max_pages,
            section["max_reflection_depth"] if max_depth is None else max_depth,
            section["max_output_tokens"] if max_tokens is None else max_tokens,
            section["time_budget_s"] if time_s is None else time_s,
        )
        budgets.check()
        return budgets

    def check(self) -> None:
        for name, value, low, cap in (
            ("maxPages", self.max_pages, 1, HARD_CAPS["max_pages"]),
            ("maxReflectionDepth", self.max_depth, 0, HARD_CAPS["max_reflection_depth"]),
            ("maxOutputTokens", self.max_tokens, 50, 100_000),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= cap:
                raise ValidationError(f"must be a whole number from {low} to {cap}", name)
        cap = HARD_CAPS["time_budget_s"]
        time_s = self.time_s
        if isinstance(time_s, bool) or not isinstance(time_s, int | float) or not 0 < time_s <= cap:
            raise ValidationError(
                f"must be a number of seconds, more than 0 and at most {cap}", "timeBudgetS"
            )


@dataclass
class Deadline:
    """One request's time budget (``at``, on time.perf_counter's clock), passed down the
    request's steps: a Researcher serves concurrent requests, each with its own."""

    at: float
    cut_short: bool = False  # the budget ran out: the briefing says it holds what was found

    def left(self) -> float:
        return max(0.0, self.at - time.perf_counter())

    def passed(self) -> bool:
        """Whether the budget is spent (noted, for the briefing to say)."""
        if time.perf_counter() >= self.at:
            self.cut_short = True
        return self.cut_short


class Researcher:
    """Builds briefings for one tenant. ``engine`` is the planning/integration/reflection
    engine (offline by default; an LLM engine may be given, per step it falls back to the
    offline one)."""

    def __init__(
        self, kb: KnowledgeBase, tenant: str, engine: Any = None, toolkit: Toolkit | None = None
    ):
        self.kb = kb
        self.tenant = tenant
        self.toolkit = toolkit or Toolkit(kb, tenant)
        self.k = int(kb.settings.section("research")["k"])
        self.offline = OfflineEngine(self.toolkit, self.k)
        self.engine = engine or self.offline
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kbmem-search")

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    def research(
        self,
        request: str,
        *,
        max_pages: int | None = None,
        max_depth: int | None = None,
        max_tokens: int | None = None,
        on_event: EventSink | None = None,
        time_budget_s: float | None = None,
    ) -> BriefingContext:
        """A cited briefing for ``request``: plan, then search, integrate and reflect until
        reflection is done, ``max_depth`` follow-up steps are spent or the time budget
        (``time_budget_s``, default the setting research.time_budget_s) runs out; then the
        briefing holds what was found so far and says it was cut short. ``on_event`` gets
        each trace event as it happens. The briefing says which commit the index reflects,
        and its open questions say so when the index is behind HEAD."""
        _check_request(request)
        budgets = Budgets.from_settings(
            self.kb.settings, max_pages, max_depth, max_tokens, time_budget_s
        )
        if max_pages is None and question_kind(without_cue(request)) in GATHERED:
            # A list's items were each said once, often in sessions of their own: the
            # evidence draws on more pages, within the same token budget.
            budgets.max_pages = min(
                HARD_CAPS["max_pages"], math.ceil(budgets.max_pages * GATHERED_PAGES)
            )
        trace = _Trace(on_event)
        started, started_ns = time.perf_counter(), time.time_ns()
        deadline = Deadline(started + budgets.time_s)
        self.toolkit.index.ensure_synced()
        freshness = self.toolkit.index.status()
        # "Quick question: where do the flights leave from?" is about the flights: searched
        # for, the cue found "Quick one today" and was named as missing from the evidence.
        # A note after the question on its answer's form ("… Answer yes or no.") likewise
        # says how to answer, not what is asked: its "Answer" was named as never mentioned.
        asked = without_form_note(without_cue(request))
        state = ResearchState(asked, around=self.toolkit.around, max_pages=budgets.max_pages)
        state.reading = read_request(self.toolkit, asked, QUESTION_WORDS)
        decision, steps = self._investigate(asked, state, budgets.max_depth, trace, deadline)
        notes = [freshness.notice()] if freshness.notice() else []
        if deadline.cut_short:
            notes.append(
                f"Research was cut short by its time budget ({budgets.time_s:g} s); this "
                "briefing holds what was found by then."
            )
        briefing = self._brief(
            request, state, budgets, decision, not decision.done, steps, [n for n in notes if n]
        )
        briefing.trace = trace.events
        briefing.index = freshness.as_dict()
        briefing.cut_short = deadline.cut_short
        briefing.partial = briefing.partial or deadline.cut_short
        trace.emit(
            "done",
            steps,
            tokensUsed=briefing.tokens_used,
            pagesUsed=briefing.pages_used,
            keyFacts=briefing.shown_facts(),  # as the briefing shows them: the answer first
            evidence=len(briefing.evidence),
            partial=briefing.partial,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )
        record_research(briefing, trace.events, started_ns, self.tenant, budgets.max_depth)
        return briefing

    # -- steps ------------------------------------------------------------------------------

    def _investigate(
        self, asked: str, state: ResearchState, max_depth: int, trace: _Trace, deadline: Deadline
    ) -> tuple[ReflectionDecision, int]:
        """The research loop: the plan's searches, then integration and reflection, and the
        follow-up searches reflection asks for, up to ``max_depth`` times. Returns the last
        decision and the follow-up steps taken."""
        emit = trace.emit
        floors = self._floors(asked)
        down: list[str] = []  # why the model was unreachable, once it was
        memory = read_memory(self.kb, self.tenant)
        actions = self._engine_call("plan", emit, 0, down, asked, memory, state)
        actions = self._dedupe(actions, state)
        decision = ReflectionDecision(False)
        steps = 0
        for step in range(max_depth + 1):
            state.step = step
            emit("plan", step, actions=[a.to_dict() for a in actions])
            self._search(actions, state, emit, step, floors, deadline)
            state.integration = self._engine_call("integrate", emit, step, down, asked, state)
            emit(
                "integrate",
                step,
                keyFacts=list(state.integration.key_facts),
                pages=state.briefing_pages(),
                candidates=len(state.candidates),
            )
            decision = self._engine_call("reflect", emit, step, down, asked, state)
            actions = self._dedupe(list(decision.follow_up), state)
            if not decision.done and not actions:
                decision = replace(
                    decision, done=True, follow_up=[], reason="no new searches left to try"
                )
            emit(
                "reflect",
                step,
                done=decision.done,
                missingInfo=decision.missing_info,
                reason=decision.reason,
            )
            if decision.done or step == max_depth:
                break
            if deadline.passed():
                emit("warning", step, stage="reflect", message="the time budget ran out")
                break
            steps += 1
        return decision, steps

    def _engine_call(
        self, what: str, emit: Callable[..., None], step: int, down: list[str], *args: Any
    ) -> Any:
        """Run one step with the chosen engine; fall back to the offline engine on failure.
        Once the model could not be reached, the request's later steps do not ask it again
        (``down`` holds why): each would wait out the same timeout (a model server that hung
        cost 15 timeouts per request, with retries)."""
        if self.engine is not self.offline and down:
            error = f"not asked: the model was unreachable earlier in this request ({down[0]})"
            emit("fallback", step, stage=what, error=error, engine="offline")
        elif self.engine is not self.offline:
            try:
                return getattr(self.engine, what)(*args)
            except ModelUnreachable as exc:
                down.append(str(exc))
                emit("fallback", step, stage=what, error=str(exc), engine="offline")
            except KbmemError as exc:
                emit("fallback", step, stage=what, error=str(exc), engine="offline")
            finally:
                for note in getattr(self.engine, "notes", []):
                    emit("warning", step, stage=what, message=note)
                if hasattr(self.engine, "notes"):
                    self.engine.notes.clear()
        return getattr(self.offline, what)(*args)

    def _dedupe(self, actions: list[PlanAction], state: ResearchState) -> list[PlanAction]:
        """The actions that search for something not searched yet: the same tool with the same
        query among the same pages, the same speaker's turns and the same kind of intervals
        finds the same hits (``k`` only cuts them, and ``follows`` and ``note`` change how they
        are used, not which)."""
        out = []
        for action in actions:
            where = (action.page_ids, action.speaker, action.interval_kind)
            key = (action.tool, repr((action.query or "", *where)))
            if key in state.queries_done:
                continue
            state.queries_done.add(key)
            out.append(action)
        return out[:MAX_ACTIONS_PER_STEP]

    def _floors(self, request: str) -> dict[str, float]:
        """The least score a dense and a late-interaction hit must reach: DENSE_FLOOR and
        LATE_FLOOR, or the ALONE floors when memory holds none of the request's words."""
        stats = self.toolkit.term_stats(analyze(request))
        stats.pop("__total__", None)
        if any(stats.values()):
            return {"dense": DENSE_FLOOR, "late": LATE_FLOOR}
        return {"dense": DENSE_ALONE_FLOOR, "late": LATE_ALONE_FLOOR}

    def _search(
        self,
        actions: list[PlanAction],
        state: ResearchState,
        emit: Callable[..., None],
        step: int,
        floors: dict[str, float],
        deadline: Deadline,
    ) -> None:
        """Run the step's searches in parallel, and take their hits into ``state`` in the
        actions' order."""
        for n, action in enumerate(actions):
            emit("tool_call", step, call=n, **action.to_dict())
        # The model first reads the step's queries by meaning, in one pass and alone (see
        # kbmem.index.embedder.read_queries); then every search runs. Beside the keyword
        # searches' threads, the same pass took longer than the searches it would have
        # overlapped. A failed reading is met again, and reported, by each search that needs it.
        queries = [q for a in actions if a.tool in MEANING_TOOLS and analyze(q := a.query or "")]
        started = time.perf_counter()
        if queries:
            with suppress(Exception):
                read_queries(queries)
        futures = [self._pool.submit(run_action, self.toolkit, a, floors) for a in actions]
        for n, (action, future) in enumerate(zip(actions, futures, strict=True)):
            try:
                hits, pages = future.result(timeout=deadline.left())
            except TimeoutError:  # concurrent.futures' own, since Python 3.11
                deadline.cut_short = True
                future.cancel()
                emit(
                    "tool_result",
                    step,
                    call=n,
                    tool=action.tool,
                    error="not finished within the time budget",
                    hits=[],
                    ms=round((time.perf_counter() - started) * 1000, 1),
                )
                continue
            except KbmemError as exc:
                emit(
                    "tool_result",
                    step,
                    call=n,
                    tool=action.tool,
                    error=str(exc),
                    hits=[],
                    ms=round((time.perf_counter() - started) * 1000, 1),
                )
                continue
            new = _take_hits(state, action, hits, pages, step)
            emit(
                "tool_result",
                step,
                call=n,
                tool=action.tool,
                new=new,
                ms=round((time.perf_counter() - started) * 1000, 1),
                hits=[_hit_summary(h) for h in hits[:10]],
            )

    def _brief(
        self,
        request: str,
        state: ResearchState,
        budgets: Budgets,
        decision: ReflectionDecision,
        partial: bool,
        steps: int,
        notes: list[str] | None = None,
    ) -> BriefingContext:
        """The briefing: a summary, the key facts and the open questions (``notes`` first:
        what the reader must know about how the briefing was made), and the evidence within
        what is left of the token budget."""
        notes = notes or []
        integration = state.integration
        facts = fit_list(integration.key_facts, budgets.max_tokens // 5)
        summary_budget = max(20, budgets.max_tokens // 10)
        summary = _summary(state, integration.briefing_draft)
        summary = truncate_tokens(summary, summary_budget)
        missing = _open_question(partial, budgets.max_depth, decision.missing_info)
        reading = state.reading or Reading(state.request)
        # A word read under a near spelling is shown as the best intervals found write it.
        # (The pool is sorted for that only when a word was so read.)
        shown = [c.hit.excerpt for c in state.ranked()[:READ_FROM]] if reading.near else []
        read = reading.open_questions(shown)
        written = count_tokens(summary) + sum(count_tokens(f) for f in facts)
        overhead = written + sum(
            count_tokens(q) for q in notes + integration.open_questions + missing + read
        )
        evidence = select_evidence(
            self.toolkit, state, max(0, budgets.max_tokens - overhead), facts
        )
        if decision.missing_words:
            texts = [e.excerpt for e in evidence] + facts
            partial, missing = _still_missing(
                decision.missing_words, texts, reading, partial, missing, budgets.max_depth
            )
        open_questions = notes + list(integration.open_questions) + missing + read
        pages_used = list(dict.fromkeys(e.page_id for e in evidence))
        tokens = (
            written
            + sum(count_tokens(q) for q in open_questions)
            + sum(count_tokens(e.excerpt) for e in evidence)
        )
        briefing = BriefingContext(
            summary,
            facts,
            open_questions,
            evidence,
            tokens,
            steps,
            pages_used,
            request=request,
            tenant_id=self.tenant,
            engine=getattr(self.engine, "name", "offline"),
            partial=partial,
        )
        if not is_statement(request):
            # The direct answer, once: it leads the key facts a caller over HTTP or MCP
            # reads, and the offline agent answers with it.
            answer = direct_answer(state.request, evidence)
            _lead_with(briefing, answer, integration.fact_sources, summary_budget, budgets)
        return briefing


def _lead_with(
    briefing: BriefingContext,
    answer: DirectAnswer,
    sources: list[Source],
    summary_budget: int,
    budgets: Budgets,
) -> None:
    """Give ``briefing`` its direct answer. When memory gives one, it is shown first among
    the key facts: the summary numbers the researched facts from 2 (``sources``: theirs, when
    the engine wrote the summary from them), and the last researched facts make room for it
    within the token budget, or it goes (it came after the budget was shared out)."""
    lead = answer.fact()
    briefing.answer = answer
    if not lead:
        return
    briefing.tokens_used += count_tokens(lead)
    if sources:
        summary = truncate_tokens(lead_draft(sources, first=2), summary_budget)
        briefing.tokens_used += count_tokens(summary) - count_tokens(briefing.executive_summary)
        briefing.executive_summary = summary
    facts = briefing.key_facts
    while facts and briefing.tokens_used > budgets.max_tokens:
        briefing.tokens_used -= count_tokens(facts.pop(-1))
    if briefing.tokens_used > budgets.max_tokens:
        briefing.tokens_used -= count_tokens(lead)
        briefing.answer = None


def _check_request(request: object) -> None:
    """Refuse a request that is no text, blank, or too long, naming what is wrong."""
    if not isinstance(request, str) or not request.strip():
        raise ValidationError("must be non-empty text", "request")
    if len(request) > MAX_REQUEST_CHARS:
        raise ValidationError(f"longer than {MAX_REQUEST_CHARS} characters", "request")


@dataclass
class _Trace:
    """The trace of one request: every event kept, and passed to ``on_event`` as it
    happens."""

    on_event: EventSink | None
    events: list[TraceEvent] = field(default_factory=list)

    def emit(self, kind: str, step: int, **data: Any) -> None:
        event = TraceEvent(kind, step, data)
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)


def _still_missing(
    words: list[str],
    texts: list[str],
    reading: Reading,
    partial: bool,
    missing: list[str],
    depth: int,
) -> tuple[bool, list[str]]:
    """Whether the briefing is partial, and its open question on what is missing, once the
    evidence is chosen. Reflection judged the best intervals of its step; the evidence
    (``texts``) carries more of them. A word that the evidence holds after all, as the
    request asks it, is not missing, and a request whose every word it holds so is covered.
    (Here a request that asks one thing needs the word beside another of its words too:
    this names words, it does not search for them.)"""
    parts = request_parts(reading.text)
    lacking = [
        word
        for word in words
        if not any(holds_as_asked(t, word, asked_with(parts, word)) for t in texts)
    ]
    if not lacking:
        return False, []
    if lacking != words:
        named = "the words " + ", ".join(f"'{reading.typed(w)}'" for w in lacking)
        return partial, _open_question(partial, depth, named)
    return partial, missing


def run_action(
    toolkit: Toolkit, action: PlanAction, floors: dict[str, float] | None = None
) -> tuple[list[Hit], list[str]]:
    """The action's ranked interval hits, and the pages it votes for: for keyword searches
    the pages ranked as whole documents, for semantic ones the pages of the nearest
    intervals. Dense and late-interaction hits count from their ``floors`` up."""
    floor = (floors or {"dense": DENSE_FLOOR, "late": LATE_FLOOR}).get(action.tool, 0.0)
    wanted = {"speaker": action.speaker, "kind": action.interval_kind}
    filters = {name: value for name, value in wanted.items() if value} or None
    if action.tool == "bm25":
        query = action.query or ""
        pages = [p for p, _s in toolkit.bm25_pages(query, PAGE_VOTES, filters)]
        found = toolkit.bm25(query, action.k + REPEAT_SLACK, filters)
        return distinct(found, action.k), pages
    if action.tool == "dense":
        depth = max(action.k + REPEAT_SLACK, DENSE_VOTE_DEPTH)
        near = [h for h in toolkit.dense(action.query or "", depth, filters) if h.score >= floor]
        return distinct(near, action.k), [p for p, _s in rank_pages(near)]
    if action.tool == "late":
        found = toolkit.late(action.query or "", action.k + REPEAT_SLACK, filters)
        return distinct([h for h in found if h.score >= floor], action.k), []
    if action.tool == "page_id":
        hits: list[Hit] = []
        for page_id in action.page_ids:
            toolkit.store.read(page_id)  # refuses ids this tenant does not have
            if action.query:
                hits += toolkit.hybrid(action.query, action.k, {"page": page_id})
            else:
                hits += toolkit.index.intervals_of(page_id)[: action.k]
        hits.sort(key=lambda h: -h.score)
        return [_as(h, "page_id") for h in hits], []
    raise ValidationError(f"unknown tool {action.tool!r}", "tool")


def _take_hits(
    state: ResearchState, action: PlanAction, hits: list[Hit], pages: list[str], step: int
) -> int:
    """Take one search's hits into the pool, as a follow-up, as covering a word of the
    request, or as a search of its own; the first step's searches vote for ``pages`` too.
    Returns how many of the hits were new."""
    weight = ACTION_WEIGHT.get(action.tool, 1.0)
    if action.follows:
        new = state.follow(action, hits, weight, BRIDGE_TOP, BRIDGE_SHARE)
    elif action.covers:
        new = state.cover(action, hits, weight)
    else:
        # Late interaction ranks the intervals, not the pages: its hits help interval
        # coverage when they leave the pages alone, and cost page coverage when they count
        # for pages too.
        new = state.add(action, hits, weight, paged=action.tool != "late")
    state.actions_done.append(action)
    if pages and step == 0:
        state.vote_pages(pages, PAGE_VOTE_WEIGHT.get(action.tool, 1.0))
    return new


def _open_question(partial: bool, depth: int, missing_info: str | None) -> list[str]:
    """What the briefing says is missing: that the budget ended first, or what reflection
    looked for and the evidence does not hold."""
    if partial:
        return [
            f"Budget reached (reflection depth {depth}) before the request was covered; "
            f"missing: {missing_info or 'unknown'}"
        ]
    if missing_info:
        # Searched for and not found among the evidence, which is not to say that memory
        # holds none of it: it may say it in other words.
        return [f"Not found in the evidence: {missing_info}"]
    return []


def distinct(hits: list[Hit], k: int) -> list[Hit]:
    """The first ``k`` hits whose words no better hit already said, and the echoes among them
    (see sessions.is_echo), which do not take one of the ``k`` places. Memory repeats itself:
    the same question asked in several chats, kbmem's answers that quote their sources, a
    pasted paragraph. Repeats would fill a search's ``k`` places with one thing and push
    everything else out, the original sources included."""
    seen: set[str] = set()
    out: list[Hit] = []
    places = 0
    for hit in hits:
        text = hit.excerpt.split(": ", 1)[1] if hit.speaker and ": " in hit.excerpt else hit.excerpt
        key = " ".join(_WORDS.findall(text.lower()))
        if key and key in seen:
            continue
        seen.add(key)
        out.append(hit)
        places += not is_echo(hit.session_id, hit.speaker, hit.excerpt)
        if places == k:
            break
    return out


def _as(hit: Hit, retriever: str) -> Hit:
    return replace(hit, retriever=retriever)


def _hit_summary(hit: Hit) -> dict[str, Any]:
    excerpt = " ".join(hit.excerpt.split())
    return {
        "pageId": hit.page_id,
        "lines": [hit.interval.start, hit.interval.end],
        "score": round(hit.score, 4),
        "retriever": hit.retriever,
        "excerpt": excerpt[:160],
    }


def _summary(state: ResearchState, draft: str) -> str:
    """The integration's draft; without one, where the evidence is strongest. (Counts and page
    lists are in the trace: the briefing's tokens go to what answers the request.)"""
    if draft:
        return draft
    pages = state.page_scores()
    if not pages:
        return "Memory holds nothing that matches this request."
    top = ", ".join(p for p, _ in pages[:3])
    return f"{len(state.candidates)} passages found; strongest pages: {top}."
