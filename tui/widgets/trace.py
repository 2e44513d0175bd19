"""The live research trace of a turn: the plan of each step, one collapsible widget per tool
call updated in place (arguments, status, duration, hits as ``page:lines`` with an excerpt),
integration and reflection, then the briefing. Every text from the model, the tools or the
pages is shown literally (Rich ``Text``/``Content``, never markup)."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from ..render import one_line, plain
from .follow import FollowScroll

RUNNING, DONE, FAILED = "running", "done", "failed"
ICONS = {RUNNING: "◌", DONE: "✓", FAILED: "✗"}


def describe_action(data: dict[str, Any]) -> tuple[str, str]:
    """A researcher action or an agent tool call as ``(tool, what it asked for)``."""
    tool = str(data.get("tool") or data.get("name") or "?")
    if data.get("query"):
        what = f"“{one_line(data['query'], 60)}”"
    elif data.get("pageIds"):
        what = ", ".join(data["pageIds"][:3]) + ("…" if len(data["pageIds"]) > 3 else "")
    elif data.get("request"):
        what = f"“{one_line(data['request'], 60)}”"
    else:
        rest = [v for k, v in data.items() if k not in ("tool", "name") and isinstance(v, str)]
        what = one_line(rest[0], 60) if rest else ""
    return tool, what


def hit_line(page_id: str, start: int, end: int, excerpt: str = "", score: Any = None) -> Text:
    text = Text(end="")
    text.append(f"{page_id}:{start}-{end}", style="bold cyan")
    if score is not None:
        text.append(f"  {score}", style="dim")
    if excerpt:
        text.append("\n   " + one_line(excerpt, 150), style="")
    return text


class ToolCallView(Collapsible):
    """One tool call: its title line shows the status and duration; inside, the arguments
    and, when it has finished, the hits (or the error)."""

    DEFAULT_CSS = """
    ToolCallView { padding: 0; margin: 0; border: none; background: transparent; }
    ToolCallView > Contents { padding: 0 0 0 2; }
    ToolCallView.-failed CollapsibleTitle { color: $error; }
    ToolCallView.-done CollapsibleTitle { color: $text; }
    ToolCallView.-running CollapsibleTitle { color: $warning; }
    ToolCallView .args { color: $text-muted; }
    """

    def __init__(self, name: str, arguments: dict[str, Any], *, collapsed: bool = True):
        self.call_name = name
        self.arguments = arguments
        self.status = RUNNING
        self.hit_count: int | None = None
        self.duration_ms: float | None = None
        self.args_view = Static(self._args_text(), classes="args")
        self.result_view = Static(Text("running…", style="italic"), classes="result")
        super().__init__(
            self.args_view,
            self.result_view,
            title=self._title_content(),  # type: ignore[arg-type]  # a Content: never markup
            collapsed=collapsed,
            classes="-running",
        )

    def _args_text(self) -> Text:
        shown = {k: v for k, v in self.arguments.items() if v not in (None, "", [], {})}
        return plain(json.dumps(shown, ensure_ascii=False, default=str))

    def _title_content(self) -> Content:
        # Status, counts and time first: a long query is what gets cut at the panel's edge.
        tool, what = describe_action({"name": self.call_name, **self.arguments})
        parts = [f"{ICONS[self.status]} {tool}"]
        if self.hit_count is not None:
            parts.append(f"{self.hit_count} hit{'s' if self.hit_count != 1 else ''}")
        if self.duration_ms is not None:
            parts.append(f"{self.duration_ms:.0f} ms")
        if self.status == FAILED:
            parts.append("failed")
        if what:
            parts.append(what)
        return Content(" · ".join(parts))

    def finish(
        self,
        hits: list[Text],
        duration_ms: float | None,
        error: str | None = None,
        hit_count: int | None = None,
    ) -> None:
        """The call ended: show its hits (or error), duration and status in place."""
        self.status = FAILED if error else DONE
        self.duration_ms = duration_ms
        self.hit_count = None if error else (len(hits) if hit_count is None else hit_count)
        self.set_class(False, "-running")
        self.set_class(True, f"-{self.status}")
        if error:
            self.result_view.update(plain(error, "bold red"))
        else:
            self.show_hits(hits)
        self.title = self._title_content()  # type: ignore[assignment]

    def show_hits(self, hits: list[Text]) -> None:
        if hits:
            self.result_view.update(Text("\n", end="").join(hits))
        else:
            self.result_view.update(Text("no hits", style="italic"))


class StepLine(Static):
    """One line of the trace that is not a tool call (plan, integration, reflection)."""

    DEFAULT_CSS = """
    StepLine { color: $text-muted; padding: 0 0 0 1; }
    StepLine.-plan { color: $text-accent; text-style: bold; padding: 0; margin-top: 1; }
    StepLine.-fallback { color: $warning; }
    """


class ResearchCallView(Vertical):
    """An agent's ``research`` tool call: the researcher's steps nest inside it."""

    DEFAULT_CSS = """
    ResearchCallView {
        height: auto; border-left: outer $primary; padding: 0 0 0 1; margin-bottom: 1;
    }
    ResearchCallView > .head { text-style: bold; }
    ResearchCallView.-failed { border-left: outer $error; }
    """

    def __init__(self, arguments: dict[str, Any], show_times: bool = True):
        super().__init__()
        self.arguments = arguments
        self.show_times = show_times
        self.calls: dict[tuple[int, int], ToolCallView] = {}
        self.key_facts: list[str] = []
        self.head = Static(self._head(RUNNING), classes="head")
        self._early: list[Widget] = []  # lines that came before this widget was mounted
        self._ready = False  # set by on_mount: Widget.is_mounted turns True a little later

    def _head(self, status: str, extra: str = "") -> Text:
        tool, what = describe_action({"name": "research", **self.arguments})
        line = f"{ICONS[status]} {tool} {what}".rstrip()
        return plain(line + (f" · {extra}" if extra else ""))

    def compose(self) -> ComposeResult:
        yield self.head

    def on_mount(self) -> None:
        self._ready = True
        early, self._early = self._early, []
        if early:
            self.mount_all(early)

    def add(self, widget: Widget) -> None:
        """Add a line under the head. The researcher's first events can arrive before this
        widget has composed its head; mounting them then would put them above it."""
        if self._ready:
            self.mount(widget)
        else:
            self._early.append(widget)

    def step(self, kind: str, step: int, data: dict[str, Any]) -> None:
        """Show one researcher event (``TraceEvent`` kind, step, data)."""
        if kind == "plan":
            actions = data.get("actions") or []
            self.add(
                StepLine(
                    plain(f"step {step}: plan — {len(actions)} search(es)"),
                    classes="-plan",
                )
            )
        elif kind == "tool_call":
            view = ToolCallView(str(data.get("tool")), _action_args(data))
            self.calls[(step, int(data.get("call", 0)))] = view
            self.add(view)
        elif kind == "tool_result":
            found = self.calls.get((step, int(data.get("call", 0))))
            if found is None:
                found = ToolCallView(str(data.get("tool")), {})
                self.add(found)
            hits = [_hit(h) for h in data.get("hits") or []]
            found.finish(hits, data.get("ms") if self.show_times else None, data.get("error"))
        elif kind == "integrate":
            self.key_facts = [str(f) for f in data.get("keyFacts") or []]
            pages = data.get("pages") or []
            self.add(
                StepLine(
                    plain(
                        f"integrate: {data.get('candidates', 0)} passages; "
                        f"pages {', '.join(pages[:4])}{'…' if len(pages) > 4 else ''}"
                    )
                )
            )
        elif kind == "reflect":
            if data.get("done"):
                line = f"reflect: enough — {data.get('reason') or 'covered'}"
            else:
                line = f"reflect: missing {data.get('missingInfo') or '?'} → search again"
            self.add(StepLine(plain(one_line(line, 200))))
        elif kind == "fallback":
            self.add(
                StepLine(
                    plain(f"{data.get('stage')}: fell back to offline ({data.get('error')})"),
                    classes="-fallback",
                )
            )
        elif kind == "done":
            if data.get("keyFacts") is not None:  # the final ones, the direct answer first
                self.key_facts = [str(f) for f in data["keyFacts"]]
            pages = len(data.get("pagesUsed") or [])
            summary = f"{pages} pages, {data.get('tokensUsed', 0)} tokens"
            if self.show_times:
                summary += f", {data.get('ms', 0):.0f} ms"
            self.head.update(self._head(DONE, summary))

    def finish(self, error: str | None) -> None:
        if error:
            self.set_class(True, "-failed")
            self.head.update(self._head(FAILED, one_line(error, 120)))


def _hit(hit: dict[str, Any]) -> Text:
    """A researcher's hit (``pageId``, ``lines``, ``excerpt``, ``score``) as a trace line."""
    start, end = [*(hit.get("lines") or []), 0, 0][:2]
    return hit_line(
        str(hit.get("pageId")),
        int(start),
        int(end),
        str(hit.get("excerpt") or ""),
        hit.get("score"),
    )


def _action_args(data: dict[str, Any]) -> dict[str, Any]:
    keep = ("query", "speaker", "pageIds", "k", "note")
    return {k: data[k] for k in keep if k in data}


class BriefingView(Vertical):
    """What the research handed to the agent: key facts and the evidence intervals."""

    DEFAULT_CSS = """
    BriefingView { height: auto; border: round $success; padding: 0 1; margin-bottom: 1; }
    BriefingView > .title { text-style: bold; color: $success; }
    BriefingView > .facts { margin-bottom: 1; }
    """

    def __init__(self, key_facts: list[str], evidence: list[Text]):
        super().__init__()
        self.key_facts = key_facts
        self.evidence = evidence

    def compose(self) -> ComposeResult:
        yield Static("Briefing", classes="title", markup=False)
        if self.key_facts:
            facts = Text("\n", end="").join(plain(f"• {one_line(f, 300)}") for f in self.key_facts)
            yield Static(facts, classes="facts")
        yield Static(self._evidence(), classes="evidence")

    def _evidence(self) -> Text:
        if not self.evidence:
            return Text("no evidence found", style="italic")
        return Text("\n", end="").join(self.evidence)

    def show_evidence(self, evidence: list[Text]) -> None:
        self.evidence = evidence
        self.query_one(".evidence", Static).update(self._evidence())


class TracePanel(FollowScroll):
    """The side panel of the Chat screen; cleared at the start of each turn."""

    DEFAULT_CSS = """
    TracePanel > .turn-head {
        text-style: bold; background: $boost; padding: 0 1; margin-bottom: 1;
    }
    TracePanel > .empty { color: $text-muted; padding: 1; }
    """

    def __init__(self, show_times: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.show_times = show_times
        self.calls: dict[str, ToolCallView | ResearchCallView] = {}
        self.briefings: dict[str, BriefingView] = {}
        self.intervals: dict[str, list[dict[str, Any]]] = {}
        self.border_title = "Research trace"

    def compose(self) -> ComposeResult:
        yield Static(
            "Each turn's research shows here as it happens: the plan, every search with "
            "its hits, then the briefing the answer rests on.",
            classes="empty",
            markup=False,
        )

    def on_collapsible_toggled(self) -> None:
        self.follow()

    async def start_turn(self, turn: int, message: str, agent: str, model: str | None) -> None:
        await self.remove_children()
        self.following = True
        self.calls.clear()
        self.briefings.clear()
        self.intervals.clear()
        who = agent + (f" · {model}" if model else "")
        head = plain(f"turn {turn} · {who}\n{one_line(message, 200)}")
        self.append(Static(head, classes="turn-head"))

    def note(self, call_id: str, text: str) -> None:
        """A line of context under a research call (e.g. that it waits for the index)."""
        view = self.calls.get(call_id)
        if isinstance(view, ResearchCallView):
            view.add(StepLine(plain(text), classes="-fallback"))
            self.follow()

    def turn_finished(self) -> None:
        """Stop following the end: show the turn's trace from its top (plan, searches, then
        the briefing below)."""
        self.following = False
        self.anchor(False)
        self.call_after_refresh(self.scroll_home, animate=False)

    def tool_call_started(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        view: ToolCallView | ResearchCallView
        if name == "research":
            view = ResearchCallView(arguments, self.show_times)
        else:
            view = ToolCallView(name, arguments)
        self.calls[call_id] = view
        self.append(view)

    def research_step(self, call_id: str, kind: str, step: int, data: dict[str, Any]) -> None:
        view = self.calls.get(call_id)
        if not isinstance(view, ResearchCallView):
            view = ResearchCallView({}, self.show_times)
            self.calls[call_id] = view
            self.append(view)
        view.step(kind, step, data)
        self.follow()

    def tool_call_finished(
        self,
        call_id: str,
        name: str,
        arguments: dict[str, Any],
        duration_ms: float | None,
        intervals: list[dict[str, Any]],
        error: str | None,
    ) -> None:
        """The call ended: update its widget in place; a research call adds the briefing."""
        view = self.calls.get(call_id)
        self.intervals[call_id] = intervals
        lines = _interval_lines(intervals, {})
        if isinstance(view, ResearchCallView):
            view.finish(error)
            if not error:
                briefing = BriefingView(view.key_facts, lines)
                self.briefings[call_id] = briefing
                self.append(briefing)
            return
        if view is None:
            view = ToolCallView(name, arguments)
            self.calls[call_id] = view
            self.append(view)
        view.finish(lines, duration_ms, error)

    def add_excerpts(self, call_id: str, excerpts: dict[str, str]) -> None:
        """Show the excerpts (read at each interval's commit) under the call's hits."""
        lines = _interval_lines(self.intervals.get(call_id, []), excerpts)
        briefing = self.briefings.get(call_id)
        view = self.calls.get(call_id)
        if briefing is not None:
            briefing.show_evidence(lines)
        elif isinstance(view, ToolCallView):
            view.show_hits(lines)
        self.follow()


def _interval_lines(intervals: list[dict[str, Any]], excerpts: dict[str, str]) -> list[Text]:
    return [
        hit_line(
            str(iv.get("page_id")),
            int(iv.get("start", 0)),
            int(iv.get("end", 0)),
            excerpts.get(_key(iv), ""),
        )
        for iv in intervals
    ]


def _key(interval: dict[str, Any]) -> str:
    return f"{interval.get('path')}#{interval.get('start')}-{interval.get('end')}"
