"""The tools a chat agent may call, with their JSON schemas for the model, argument checks
whose errors name the field, and the text each returns to the model.

- ``research(request)``: the researcher; returns the cited briefing.
- ``search(query, tool, k)``: one retrieval (``bm25``, ``dense`` or ``hybrid``).
- ``read_page(id, start?, end?)``: a page, or some of its lines, as committed now.
- ``expand(interval, mode, pad)``: grow an interval (a citation ``page-id:L12-L18`` or an
  interval object) to its turn, paragraph or section.

Every call is logged on the turn (arguments, times, result size, intervals, error) and
reported as ``ToolCallStarted`` / ``ToolCallFinished``; an error becomes the tool's result for
the model, the turn goes on.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

from kbmem.agent.context import TurnCancelled, TurnContext
from kbmem.agent.events import ResearchTrace, ToolCallFinished, ToolCallStarted
from kbmem.agent.records import ContextItem, ToolCallRecord
from kbmem.errors import KbmemError, ValidationError
from kbmem.index.intervals import EXPAND_MODES, Interval
from kbmem.research.researcher import Researcher
from kbmem.research.said import read_sentences
from kbmem.research.toolkit import MAX_PAD, TOOLS, Toolkit
from kbmem.research.types import BriefingContext, EvidenceItem, TraceEvent
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import CITATION, truncate_tokens

MAX_K = 50
MAX_RESULT_TOKENS = 1800
MAX_PAGE_LINES = 200

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "research",
            "description": "Research the memory (past conversations and notes) for a request "
            "and return a cited briefing. Use it before answering anything about the past.",
            "parameters": {
                "type": "object",
                "properties": {
                    "request": {"type": "string", "description": "what to find out"},
                },
                "required": ["request"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the memory once; returns passages with citations.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "tool": {"type": "string", "enum": list(TOOLS)},
                    "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_page",
            "description": "Read a page of memory by id, optionally only lines start..end.",
            "parameters": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "page id, e.g. 'session-id/1'"},
                    "start": {"type": "integer", "minimum": 1},
                    "end": {"type": "integer", "minimum": 1},
                },
                "required": ["id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "expand",
            "description": "Show more around a cited passage: its whole turn, paragraph or "
            "section, plus pad more on each side.",
            "parameters": {
                "type": "object",
                "properties": {
                    "interval": {
                        "type": "string",
                        "description": "a citation like 'page-id:L12-L18'",
                    },
                    "mode": {"type": "string", "enum": list(EXPAND_MODES)},
                    "pad": {"type": "integer", "minimum": 0, "maximum": MAX_PAD},
                },
                "required": ["interval"],
            },
        },
    },
]
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOL_SCHEMAS)


class ToolError(KbmemError):
    """A tool call that cannot run as asked; its message goes back to the model."""


@dataclass
class ToolResult:
    """What a tool call gave: ``text`` for the model, the intervals it touched, and for
    ``research`` the briefing itself."""

    call_id: str
    name: str
    text: str
    items: list[ContextItem] = field(default_factory=list)
    briefing: BriefingContext | None = None
    error: str | None = None


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments: a JSON object (as text or already parsed)."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        raise ToolError(f"arguments must be a JSON object, got {type(raw).__name__}")
    try:
        value = json.loads(raw, strict=False)  # models put raw newlines in strings
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments are not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(value, dict):
        raise ToolError("arguments must be a JSON object")
    return value


def _string(args: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise ToolError(f"{name}: missing (a string is required)")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{name}: must be non-empty text, got {value!r}"[:200])
    return value


def _integer(args: dict[str, Any], name: str, default: int | None, low: int, high: int) -> Any:
    value = args.get(name, default)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)  # small models often quote numbers
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolError(f"{name}: must be a whole number from {low} to {high}, got {value!r}")
    return value


def _unknown(args: dict[str, Any], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(args) - set(allowed))
    if extra:
        raise ToolError(f"unknown argument(s) {', '.join(extra)}; allowed: {', '.join(allowed)}")


class AgentTools:
    """The four tools over one tenant's memory (shared by every turn of a chat)."""

    def __init__(self, kb: KnowledgeBase, tenant: str, researcher: Researcher):
        self.kb = kb
        self.tenant = tenant
        self.researcher = researcher
        self.toolkit: Toolkit = researcher.toolkit
        self._calls = 0

    def call(
        self, ctx: TurnContext, name: str, arguments: Any, origin: str = "model"
    ) -> ToolResult:
        """Run one tool call on behalf of the turn ``ctx``; never raises for bad input (the
        error is the result), only TurnCancelled and KeyboardInterrupt get through."""
        self._calls += 1
        call_id = f"call-{ctx.turn}-{len(ctx.tool_calls) + 1}"
        try:
            args = parse_arguments(arguments)
            shown = args
        except ToolError as exc:
            args, shown = {}, {"_raw": str(arguments)[:2000]}
            parse_error: ToolError | None = exc
        else:
            parse_error = None
        started = time.time()
        ctx.emit(
            ToolCallStarted(
                chat_id=ctx.chat_id, turn=ctx.turn, call_id=call_id, name=name, arguments=shown
            )
        )
        trace: list[TraceEvent] = []
        result: ToolResult
        try:
            if parse_error is not None:
                raise parse_error
            if name not in TOOL_NAMES:
                raise ToolError(f"no tool named {name!r}; the tools are {', '.join(TOOL_NAMES)}")
            result = getattr(self, f"_{name}")(ctx, call_id, args, trace)
        except (TurnCancelled, KeyboardInterrupt):
            self._log(ctx, call_id, name, shown, started, None, "interrupted", origin, trace)
            raise
        except KbmemError as exc:
            message = str(exc)
            result = ToolResult(call_id, name, f"error: {message}", error=message)
        self._log(ctx, call_id, name, shown, started, result, result.error, origin, trace)
        return result

    def _log(
        self,
        ctx: TurnContext,
        call_id: str,
        name: str,
        args: dict[str, Any],
        started: float,
        result: ToolResult | None,
        error: str | None,
        origin: str,
        trace: list[TraceEvent],
    ) -> None:
        finished = time.time()
        intervals = [i.interval().to_dict() for i in result.items] if result else []
        for item, data in zip(result.items if result else [], intervals, strict=True):
            data["retriever"] = item.retriever
            data["score"] = item.score
            if item.shown:
                data["shown"] = item.shown  # see ContextItem.shown
        record = ToolCallRecord(
            call_id=call_id,
            name=name,
            arguments=args,
            started_at=started,
            finished_at=finished,
            result_chars=len(result.text) if result else 0,
            intervals=intervals,
            error=error,
            origin=origin,
            summary=_summary(name, result, error),
            trace=[t.to_dict() for t in trace],
        )
        ctx.tool_calls.append(record)
        ctx.emit(
            ToolCallFinished(
                chat_id=ctx.chat_id,
                turn=ctx.turn,
                call_id=call_id,
                name=name,
                arguments=args,
                duration_ms=record.duration_ms,
                result_chars=record.result_chars,
                intervals=intervals,
                error=error,
            )
        )

    # -- the tools --------------------------------------------------------------------------

    def _research(
        self, ctx: TurnContext, call_id: str, args: dict[str, Any], trace: list[TraceEvent]
    ) -> ToolResult:
        _unknown(args, ("request",))
        request = _string(args, "request")
        assert request is not None

        def on_trace(event: TraceEvent) -> None:
            trace.append(event)
            ctx.emit(
                ResearchTrace(chat_id=ctx.chat_id, turn=ctx.turn, call_id=call_id, trace=event)
            )

        try:
            briefing = self.researcher.research(request, on_event=on_trace)
        except ValidationError as exc:
            raise ToolError(str(exc)) from exc
        items = [
            replace(
                ContextItem.from_interval(e.interval, e.retriever_type, e.relevance_score, call_id),
                shown=e.shown,
            )
            for e in briefing.evidence
        ]
        return ToolResult(call_id, "research", render_briefing(briefing), items, briefing)

    def _search(
        self, ctx: TurnContext, call_id: str, args: dict[str, Any], trace: list[TraceEvent]
    ) -> ToolResult:
        _unknown(args, ("query", "tool", "k"))
        query = _string(args, "query")
        tool = args.get("tool", "hybrid") or "hybrid"
        if tool not in TOOLS:
            raise ToolError(f"tool: must be one of {', '.join(TOOLS)}, got {tool!r}")
        k = _integer(args, "k", 5, 1, MAX_K)
        assert query is not None
        try:
            hits = self.toolkit.search(query, tool, k)
        except ValidationError as exc:
            raise ToolError(str(exc)) from exc
        items = [ContextItem.from_interval(h.interval, h.retriever, h.score, call_id) for h in hits]
        if not hits:
            return ToolResult(call_id, "search", "no passages matched", items)
        lines = [
            f"{h.interval.citation()} {h.speaker + ': ' if h.speaker else ''}"
            f"{' '.join(h.excerpt.split())}"
            for h in hits
        ]
        return ToolResult(call_id, "search", _fit("\n".join(lines)), items)

    def _read_page(
        self, ctx: TurnContext, call_id: str, args: dict[str, Any], trace: list[TraceEvent]
    ) -> ToolResult:
        _unknown(args, ("id", "start", "end"))
        page_id = _string(args, "id")
        assert page_id is not None
        try:
            record = self.toolkit.page([page_id])[0]
        except ValidationError as exc:
            raise ToolError(str(exc)) from exc
        lines = record.text.split("\n")
        if record.text.endswith("\n"):
            lines = lines[:-1]
        start = _integer(args, "start", 1, 1, max(1, len(lines)))
        end = _integer(args, "end", None, 1, max(1, len(lines)))
        if end is None:
            end = min(len(lines), start + MAX_PAGE_LINES - 1)
        if end < start:
            raise ToolError(f"end: must be at least start ({start}), got {end}")
        end = min(end, start + MAX_PAGE_LINES - 1)
        interval = Interval(
            record.page_id, record.path, start, end, record.commit, record.blob, "line"
        )
        body = "\n".join(f"{n:>4} {line}" for n, line in enumerate(lines[start - 1 : end], start))
        text = f"{interval.citation()} (of {len(lines)} lines)\n{body}"
        item = ContextItem.from_interval(interval, "page", 1.0, call_id)
        return ToolResult(call_id, "read_page", _fit(text), [item])

    def _expand(
        self, ctx: TurnContext, call_id: str, args: dict[str, Any], trace: list[TraceEvent]
    ) -> ToolResult:
        _unknown(args, ("interval", "mode", "pad"))
        raw = args.get("interval")
        mode = args.get("mode", "turn") or "turn"
        if mode not in EXPAND_MODES:
            raise ToolError(f"mode: must be one of {', '.join(EXPAND_MODES)}, got {mode!r}")
        pad = _integer(args, "pad", 0, 0, MAX_PAD)
        interval = self.interval_of(raw)
        try:
            expanded = self.toolkit.expand(interval, mode, pad)
        except ValidationError as exc:
            raise ToolError(str(exc)) from exc
        iv = expanded.interval
        text = f"{iv.citation()}\n{expanded.text}"
        item = ContextItem.from_interval(iv, "expand", 1.0, call_id)
        return ToolResult(call_id, "expand", _fit(text), [item])

    def interval_of(self, raw: Any) -> Interval:
        """An interval from a citation (``page-id:L12-L18``, brackets optional) or an
        interval object; a citation is read at HEAD."""
        if isinstance(raw, dict):
            data = dict(raw)
            if "page_id" in data and "path" not in data:
                try:
                    data["path"] = self.toolkit.store.path_of(str(data["page_id"]))
                except ValidationError as exc:
                    raise ToolError(f"interval: {exc}") from exc
            try:
                return Interval.from_dict(data)
            except (KeyError, TypeError, ValueError) as exc:
                raise ToolError(f"interval: not an interval ({exc})") from exc
        if not isinstance(raw, str):
            raise ToolError("interval: missing (a citation like 'page-id:L12-L18' is required)")
        m = CITATION.fullmatch(raw.strip())
        if not m:
            raise ToolError(f"interval: {raw!r} is not a citation like 'page-id:L12-L18'"[:200])
        page_id, start, end = m.group(1), int(m.group(2)), int(m.group(3))
        try:
            path = self.toolkit.store.path_of(page_id)
        except ValidationError as exc:
            raise ToolError(f"interval: {exc}") from exc
        if self.kb.blob_id(path) is None:
            raise ToolError(f"interval: no page {page_id!r} in this memory")
        return Interval(page_id, path, start, end, "", "", "line")


def render_briefing(briefing: BriefingContext, max_tokens: int = MAX_RESULT_TOKENS) -> str:
    """The briefing as the model reads it: summary, facts, open questions, cited evidence."""
    parts = [f"Summary: {briefing.executive_summary}"]
    if briefing.shown_facts():
        parts.append("Key facts:\n" + "\n".join(f"- {f}" for f in briefing.shown_facts()))
    if briefing.open_questions:
        parts.append("Open questions:\n" + "\n".join(f"- {q}" for q in briefing.open_questions))
    if briefing.evidence:
        parts.append(
            "Evidence:\n"
            + "\n\n".join(
                f"{e.interval.citation()}\n{e.excerpt.strip()}{resolved_dates(e)}"
                for e in briefing.evidence
            )
        )
    else:
        parts.append("Evidence: none; memory holds nothing on this request.")
    return truncate_tokens("\n\n".join(parts), max_tokens)


def resolved_dates(item: EvidenceItem) -> str:
    """The relative dates an excerpt's turns say, resolved against the day each turn was
    said, as a line under the excerpt ("" when it says none): a model reading "last Friday"
    cannot know which Friday."""
    seen: dict[str, str] = {}
    for said in read_sentences([item]):
        for found in said.dates():
            if found.phrase.lower() != found.written.lower():
                seen.setdefault(found.phrase, found.written)
    if not seen:
        return ""
    return "\nDates resolved: " + "; ".join(f'"{k}" = {v}' for k, v in seen.items())


def _fit(text: str) -> str:
    return truncate_tokens(text, MAX_RESULT_TOKENS)


def _summary(name: str, result: ToolResult | None, error: str | None) -> str:
    if error:
        return f"error: {error}"
    if result is None:
        return ""
    if result.briefing is not None:
        b = result.briefing
        return (
            f"{len(b.evidence)} evidence passage(s) from {len(b.pages_used)} page(s), "
            f"{b.reflection_steps} reflection step(s){', partial' if b.partial else ''}"
        )
    return f"{len(result.items)} interval(s), {len(result.text)} characters"
