"""The LLM engine: planning, integration and reflection by any litellm model.

Each step asks for JSON, checks it against a small schema (unknown tools, empty queries and page
ids the tenant does not have are rejected), retries, and raises :class:`LLMError` when nothing
usable came back, so the researcher falls back to the offline step and the trace says why. The
prompts follow the intent of GAM's planning, integration and reflection prompts in our words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kbmem.config import Settings
from kbmem.errors import LLMError, ModelUnreachable, ValidationError
from kbmem.index.tenant import Hit
from kbmem.llm.client import LLMConfig, complete, extract_json
from kbmem.research.offline import (
    Correction,
    OfflineEngine,
    replaced_since,
    request_actions,
    superseded_on,
)
from kbmem.research.state import Candidate, ResearchState
from kbmem.research.types import PLAN_TOOLS, IntegrationState, PlanAction, ReflectionDecision
from kbmem.textutil import count_tokens, truncate_tokens

T = TypeVar("T")  # what a step's check makes of the model's answer

PLAN_PROMPT = """You plan searches over a memory of past sessions to answer a request.
Tools: "bm25" (keyword search; query = a few distinctive words), "dense" (semantic search;
query = a natural sentence), "page_id" (read known pages; pageIds = ids from the memory list).
Answer with JSON only, exactly this shape:
{"actions": [{"tool": "bm25", "query": "...", "k": 10, "note": "why"},
             {"tool": "dense", "query": "...", "k": 10},
             {"tool": "page_id", "pageIds": ["<session-id>/1"], "k": 10}]}
Use 2 to 5 actions. Use names, dates and rare words from the request and the memory."""

INTEGRATE_PROMPT = """You integrate evidence found in memory into a briefing for a request.
Use only the evidence given; cite it by its label, like [E2]. Answer with JSON only:
{"briefingDraft": "2-4 sentences answering the request from the evidence",
 "keyFacts": ["one fact with its citation [E1]", "..."],
 "openQuestions": ["what the evidence does not say yet"]}"""

REFLECT_PROMPT = """You check whether the evidence found so far covers a request.
Answer with JSON only: {"done": true} when it does, or
{"done": false, "missingInfo": "what is still missing",
 "followUp": ["a search query for the missing part", "..."]}"""


class LLMEngine:
    name = "llm"

    def __init__(self, toolkit: Any, config: LLMConfig, k: int = 10):
        self.toolkit = toolkit
        self.config = config
        self.k = k
        self.notes: list[str] = []  # rejected items, drained into the trace by the researcher
        self.reader = OfflineEngine(toolkit, k)  # reads intervals' sentences and corrections

    # -- calls ------------------------------------------------------------------------------

    def _ask(self, system: str, user: str, check: Callable[[Any], T], max_tokens: int) -> T:
        budget = self.config.max_prompt_tokens - count_tokens(system) - max_tokens
        user = truncate_tokens(user, max(200, budget))
        problems = []
        for _attempt in range(max(1, self.config.retries + 1)):
            try:
                answer = complete(
                    self.config,
                    [{"role": "system", "content": system}, {"role": "user", "content": user}],
                    max_tokens=max_tokens,
                    json_mode=True,
                )
                return check(extract_json(answer))
            except ModelUnreachable:
                raise  # asking again would wait again: only an unusable answer is retried
            except (LLMError, ValidationError) as exc:
                problems.append(str(exc))
        raise LLMError("; ".join(dict.fromkeys(problems))[:400])

    # -- plan -------------------------------------------------------------------------------

    def plan(
        self, request: str, memory: list[tuple[str, str, str]], state: ResearchState
    ) -> list[PlanAction]:
        known = self.toolkit.store.files()
        lines = [f"- {sid}: {memo}" for _d, sid, memo in memory]
        memory_text = fit_lines(lines, self.config.max_prompt_tokens // 2)
        user = f"MEMORY (one line per session):\n{memory_text}\n\nREQUEST: {request}"
        planned = self._ask(PLAN_PROMPT, user, lambda data: self.check_plan(data, known), 400)
        return self.grounded(request, planned)

    def grounded(self, request: str, planned: list[PlanAction]) -> list[PlanAction]:
        """The request's own searches (``request_actions``), then the model's: a plan adds to
        what the request's words find and never replaces it (a small model's queries alone
        can miss the obvious, and it cannot know whose voice memory speaks in). Repeats are
        dropped where every step's actions are, in the researcher."""
        return request_actions(self.toolkit, request, self.k) + planned

    def check_plan(self, data: Any, known: dict[str, Any]) -> list[PlanAction]:
        if not isinstance(data, dict) or not isinstance(data.get("actions"), list):
            raise ValidationError("the plan has no 'actions' list", "actions")
        actions = []
        for n, raw in enumerate(data["actions"][:8]):
            try:
                actions.append(self._action(raw, known))
            except ValidationError as exc:
                self.notes.append(f"plan action {n} rejected: {exc}")
        if not actions:
            raise ValidationError("no usable action in the plan", "actions")
        return actions

    def _action(self, raw: Any, known: dict[str, Any]) -> PlanAction:
        if not isinstance(raw, dict):
            raise ValidationError("must be an object", "action")
        tool = raw.get("tool")
        if tool not in PLAN_TOOLS:
            raise ValidationError(f"unknown tool {tool!r}", "tool")
        k = raw.get("k", self.k)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
            k = self.k
        note = str(raw.get("note") or "")[:200]
        if tool == "page_id":
            ids = raw.get("pageIds") or raw.get("page_ids") or []
            if not isinstance(ids, list) or not ids:
                raise ValidationError("page_id needs pageIds", "pageIds")
            invented = [i for i in ids if not isinstance(i, str) or i not in known]
            if invented:
                raise ValidationError(f"page ids not in memory: {invented[:3]}", "pageIds")
            return PlanAction("page_id", None, list(dict.fromkeys(ids))[:4], k, note)
        query = raw.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("needs a non-empty query", "query")
        return PlanAction(tool, query.strip()[:500], [], k, note)

    # -- integrate --------------------------------------------------------------------------

    def integrate(self, request: str, state: ResearchState) -> IntegrationState:
        top = state.citable(state.ranked()[:8])
        if not top:
            raise LLMError("no evidence to integrate")
        labels = {f"E{n}": cand.hit for n, cand in enumerate(top, start=1)}
        # A model cannot tell which of two dates memory holds now: each item says when it was
        # said and whether a later correction replaced a value it gives, as the offline
        # engine's key facts do.
        later = Supersession.of(self.reader, top)
        evidence = "\n".join(
            f"[{label}] ({later.note(hit)}) {' '.join(hit.excerpt.split())}"
            for label, hit in labels.items()
        )
        user = f"REQUEST: {request}\n\nEVIDENCE:\n{evidence}"

        def check(data: Any) -> IntegrationState:
            if not isinstance(data, dict):
                raise ValidationError("must be an object", "integration")
            draft = data.get("briefingDraft")
            facts = data.get("keyFacts", [])
            questions = data.get("openQuestions", [])
            if not isinstance(draft, str) or not draft.strip():
                raise ValidationError("missing", "briefingDraft")
            if not isinstance(facts, list) or not isinstance(questions, list):
                raise ValidationError("keyFacts and openQuestions must be lists", "keyFacts")
            cited = []
            for fact in facts[:6]:
                if not isinstance(fact, str):
                    continue
                used = [label for label in labels if f"[{label}]" in fact]
                if not used:
                    self.notes.append(f"key fact without a valid citation dropped: {fact[:80]}")
                    continue
                mark = later.fact_mark(fact, [labels[x] for x in used])
                for label in used:
                    fact = fact.replace(f"[{label}]", labels[label].interval.citation())
                cited.append(fact + mark)
            for label, hit in labels.items():
                draft = draft.replace(f"[{label}]", hit.interval.citation())
            pages = list(dict.fromkeys(h.page_id for h in labels.values()))
            return IntegrationState(
                draft.strip(), cited, [q for q in questions[:4] if isinstance(q, str)], pages
            )

        return self._ask(INTEGRATE_PROMPT, user, check, 500)

    # -- reflect ----------------------------------------------------------------------------

    def reflect(self, request: str, state: ResearchState) -> ReflectionDecision:
        top = state.ranked()[:8]
        evidence = "\n".join(f"- {' '.join(c.hit.excerpt.split())[:300]}" for c in top)
        user = f"REQUEST: {request}\n\nEVIDENCE SO FAR:\n{evidence or '(none)'}"

        def check(data: Any) -> ReflectionDecision:
            if not isinstance(data, dict) or not isinstance(data.get("done"), bool):
                raise ValidationError("must be an object with a boolean 'done'", "done")
            if data["done"]:
                return ReflectionDecision(True, reason="the model judged the request covered")
            missing = data.get("missingInfo")
            follow = data.get("followUp") or []
            if not isinstance(follow, list):
                raise ValidationError("must be a list of queries", "followUp")
            queries = [q.strip()[:300] for q in follow if isinstance(q, str) and q.strip()]
            if not queries:
                raise ValidationError("not done, but no follow-up query", "followUp")
            actions = []
            for q in queries[:3]:
                actions.append(PlanAction("bm25", q, k=self.k, note="llm follow-up"))
                actions.append(PlanAction("dense", q, k=self.k, note="llm follow-up"))
            return ReflectionDecision(
                False, str(missing or "")[:300] or None, actions, reason="the model asked for more"
            )

        return self._ask(REFLECT_PROMPT, user, check, 300)


def fit_lines(lines: list[str], budget: int) -> str:
    """Deterministic trimming: the most recent lines that fit ``budget`` tokens, in order."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    dropped = len(lines) - len(kept)
    head = [f"({dropped} older sessions left out)"] if dropped else []
    return "\n".join(head + list(reversed(kept)))


def make_llm_engine(settings: Settings, model: str | None = None) -> Callable[[Any], LLMEngine]:
    """A factory ``researcher -> LLMEngine`` for the configured (or given) model."""
    config = LLMConfig.from_settings(settings, model)
    if config is None:
        raise ValidationError(
            "the llm engine needs a model (--model, llm.model or KBMEM_MODEL)", "model"
        )
    k = int(settings.section("research")["k"])
    return lambda researcher: LLMEngine(researcher.toolkit, config, k)


@dataclass
class Supersession:
    """Which of the evidence later corrections replaced: the corrections among it, and for
    each interval (by key) the values it says were replaced itself (see offline.Statement)
    and what later corrections replaced of it (day and values)."""

    corrections: list[Correction]
    agreed: dict[str, frozenset[str]]
    replaced: dict[str, tuple[str, frozenset[str]]]

    @classmethod
    def of(cls, reader: OfflineEngine, top: list[Candidate]) -> Supersession:
        read, corrections = reader.read(top)
        agreed, replaced = {}, {}
        for cand, said in read:
            key = cand.hit.interval.key
            agreed[key] = said.agreed
            text = " ".join(said.standing)
            day, values = replaced_since(text, cand.hit.timestamp, corrections, said.agreed)
            if day:
                replaced[key] = (day, values)
        return cls(corrections, agreed, replaced)

    def note(self, hit: Hit) -> str:
        """When an evidence item was said, and what a later correction replaced of it:
        "2026-01-05; a correction on 2026-02-23 replaced 14 april here"."""
        when = hit.timestamp[:10] or "undated"
        day, values = self.replaced.get(hit.interval.key, ("", frozenset()))
        if not day:
            return when
        return f"{when}; a correction on {day} replaced {', '.join(sorted(values))} here"

    def fact_mark(self, fact: str, sources: list[Hit]) -> str:
        """ " (superseded on D)" for a fact that gives a value which a later correction
        replaced in every source it cites, else "" (a source may hold a superseded date and
        other facts that still stand)."""
        days = [
            superseded_on(
                fact,
                hit.timestamp,
                self.corrections,
                self.agreed.get(hit.interval.key, frozenset()),
            )
            for hit in sources
        ]
        return f" (superseded on {min(days)})" if days and all(days) else ""
