"""The Audit screen: every turn (chat, number, time, question), committed ones read back from
their snapshot in git, pending ones from this session's journaled records; for a turn, the
answer, the intervals it rested on resolved at their commit with the cited lines highlighted
(enter jumps to the page at that commit), the tool calls, and the reasoning."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import (
    DataTable,
    Footer,
    ListItem,
    ListView,
    Markdown,
    Static,
    TabbedContent,
    TabPane,
)

from kbmem.errors import KbmemError

from ..render import at_commit, error_text, one_line, plain
from ..widgets.interval_view import NumberedLines
from ..widgets.status_bar import StatusBar
from ..widgets.trace import ToolCallView, hit_line
from .base import KbmemScreen

if TYPE_CHECKING:
    from kbmem.agent.records import ContextItem, TurnRecord

CONTEXT_LINES = 1


def short_chat_id(chat_id: str) -> str:
    """A chat id narrow enough for the list: kbmem's own ids (``20261122-205853-73260f``)
    by their random tail, which tells chats of the same minute apart; a name someone chose
    (``--chat``) as it is, cut at 10 characters. The full id heads the turn's detail."""
    date, _, rest = chat_id.partition("-")
    if len(date) == 8 and date.isdigit() and rest.count("-") == 1:
        return "…" + rest.rsplit("-", 1)[1]
    return one_line(chat_id, 10)


@dataclass
class AuditedTurn:
    record: TurnRecord
    committed: bool

    @property
    def turn_id(self) -> str:
        return self.record.turn_id


@dataclass
class ResolvedInterval:
    """A context item with the file's text at the item's commit (or why it is unreadable)."""

    item: ContextItem
    text: str
    problem: str = ""


class IntervalCard(ListItem):
    """One interval an answer rested on, as the file was at the interval's commit."""

    DEFAULT_CSS = """
    IntervalCard { height: auto; padding: 0 1; margin-bottom: 1; }
    IntervalCard > .head { text-style: bold; }
    IntervalCard > .problem { color: $error; }
    """

    def __init__(self, resolved: ResolvedInterval):
        super().__init__()
        self.resolved = resolved

    def compose(self) -> ComposeResult:
        item = self.resolved.item
        head = Text(end="")
        head.append(item.citation(), style="bold cyan")
        head.append(f" {at_commit(item.commit)}", style="")
        head.append(
            f" · {item.retriever or '?'} · score {item.score:.4f} · "
            + ("cited in the answer" if item.cited else "shown to the agent"),
            style="dim",
        )
        yield Static(head, classes="head")
        if self.resolved.problem:
            yield Static(plain(self.resolved.problem), classes="problem")
        else:
            yield NumberedLines(self.resolved.text, item.start, item.end, CONTEXT_LINES)


class AuditScreen(KbmemScreen):
    """What each turn rested on."""

    CSS_PATH = "audit.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "tab('answer')", "Answer"),
        Binding("i", "tab('intervals')", "Intervals"),
        Binding("t", "tab('calls')", "Calls"),
        Binding("r", "tab('reasoning')", "Reasoning"),
        Binding("o", "open_interval", "Open"),
        Binding("c", "commit_now", "Commit"),
        Binding("f5", "reload", "Reload", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.turns: dict[str, AuditedTurn] = {}
        self.order: list[str] = []
        self.wanted: str | None = None
        self.current: AuditedTurn | None = None

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal():
            with Vertical(id="turn-pane"):
                table: DataTable[Text] = DataTable(id="turn-table", cursor_type="row")
                table.border_title = "Turns"
                yield table
            with Vertical(id="turn-detail"):
                yield Static("Choose a turn on the left.", id="turn-title", markup=False)
                with TabbedContent(id="audit-tabs", initial="answer"):
                    with TabPane("Answer", id="answer"), VerticalScroll():
                        yield Static(id="question")
                        yield Markdown(id="answer-text", open_links=False)
                    with TabPane("Intervals", id="intervals"):
                        yield ListView(id="interval-list")
                    with TabPane("Tool calls", id="calls"):
                        yield VerticalScroll(id="call-list")
                    with TabPane("Reasoning", id="reasoning"), VerticalScroll():
                        yield Markdown(id="reasoning-text", open_links=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#turn-table", DataTable)
        table.add_column(" ", key="where")
        table.add_column("chat", key="chat")
        table.add_column("#", key="number")
        if self.kbmem.show_times:
            table.add_column("time (UTC)", key="time")
        table.add_column("question", key="question")
        self.load_turns()

    def on_screen_resume(self) -> None:
        self.load_turns()

    # -- the list of turns ------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="audit-turns", exclusive=True)
    def load_turns(self) -> None:
        from kbmem.agent.provenance import committed_turn_numbers, read_turn

        ws = self.workspace
        ws.check_available()
        kb = ws.kb
        found: dict[str, AuditedTurn] = {}
        problems: list[str] = []
        if kb.head() is not None:
            for chat_id, numbers in committed_turn_numbers(kb, ws.tenant).items():
                for n in numbers:
                    try:
                        record = read_turn(kb, ws.tenant, chat_id, n)
                    except (KbmemError, ValueError) as exc:
                        problems.append(f"{chat_id}/{n}: {error_text(exc)}")
                        continue
                    found[record.turn_id] = AuditedTurn(record, True)
        for record in self.kbmem.turn_records():
            if record.turn_id not in found and record.tenant == ws.tenant:
                found[record.turn_id] = AuditedTurn(record, False)
        self.app.call_from_thread(self._fill_turns, found, problems)

    def _fill_turns(self, found: dict[str, AuditedTurn], problems: list[str]) -> None:
        for problem in problems:
            self.notify(problem, title="Unreadable turn", severity="warning", markup=False)
        self.turns = found
        self.order = sorted(
            found, key=lambda t: (found[t].record.started_at, found[t].record.turn), reverse=True
        )
        table = self.query_one("#turn-table", DataTable)
        keep = self.wanted or (self.current.turn_id if self.current else None)
        table.clear()
        for turn_id in self.order:
            audited = found[turn_id]
            r = audited.record
            cells = [
                plain("✓", "green") if audited.committed else plain("●", "yellow"),
                plain(short_chat_id(r.chat_id), "dim"),
                plain(str(r.turn)),
            ]
            if self.kbmem.show_times:
                cells.append(plain(self._time(r.started_at)))
            question = plain(one_line(r.question, 30))
            if r.status != "complete":
                question = Text.assemble((f"{r.status} ", "bold yellow"), question)
            cells.append(question)
            table.add_row(*cells, key=turn_id)
        if not self.order:
            self.query_one("#turn-title", Static).update(
                Text("No turns yet: ask something on the Chat screen (F2).", style="dim")
            )
            return
        target = keep if keep in found else self.order[0]
        table.move_cursor(row=self.order.index(target), animate=False)
        self.wanted = None
        previous = self.current
        if (
            previous is None
            or previous.turn_id != target
            or previous.committed != found[target].committed
        ):
            self.show_turn(found[target])

    def _time(self, epoch: float) -> str:
        if not epoch:
            return ""
        return datetime.fromtimestamp(epoch, UTC).strftime("%m-%d %H:%M")

    def select_turn(self, turn_id: str | None) -> None:
        """Show ``turn_id`` (``<chat-id>/<n>``), or the newest turn."""
        self.wanted = turn_id
        self.load_turns()

    @on(DataTable.RowHighlighted, "#turn-table")
    def _turn_highlighted(self, event: DataTable.RowHighlighted) -> None:
        turn_id = event.row_key.value
        if turn_id in self.turns and (self.current is None or self.current.turn_id != turn_id):
            self.show_turn(self.turns[turn_id])

    # -- one turn ---------------------------------------------------------------------------

    def show_turn(self, audited: AuditedTurn) -> None:
        self.current = audited
        self.refresh_bindings()  # "open" applies only to a turn with intervals
        r = audited.record
        where = "committed" if audited.committed else "pending (journaled, not committed yet)"
        self.query_one("#turn-title", Static).update(
            Text.assemble(
                (f"turn {r.turn_id}", "bold"),
                f" · {r.agent}" + (f" · {r.model}" if r.model else ""),
                f" · {r.status}",
                (f" · {where}", "dim"),
            )
        )
        self.query_one("#question", Static).update(
            Text.assemble(("Question: ", "bold"), r.question)
        )
        answer = r.answer if not r.error else f"{r.answer}\n\n*{r.status}: {r.error}*"
        self.query_one("#answer-text", Markdown).update(answer)
        self._fill_calls(r)
        self.load_details(audited)

    def _fill_calls(self, record: TurnRecord) -> None:
        calls = self.query_one("#call-list", VerticalScroll)
        calls.remove_children()
        if not record.tool_calls:
            calls.mount(Static(Text("No tool calls.", style="dim")))
            return
        for call in record.tool_calls:
            view = ToolCallView(call.name, call.arguments)
            hits = [
                hit_line(str(iv.get("page_id")), int(iv.get("start", 0)), int(iv.get("end", 0)))
                for iv in call.intervals
            ]
            view.finish(
                hits,
                call.duration_ms if self.kbmem.show_times else None,
                call.error,
            )
            calls.mount(view)

    @work(thread=True, exit_on_error=False, group="audit-turn", exclusive=True)
    def load_details(self, audited: AuditedTurn) -> None:
        """Resolve every interval at its commit (only the tenant's own pages are read);
        read the committed reasoning."""
        from kbmem.agent.provenance import read_cited_file, render_reasoning, turn_dir

        kb = self.workspace.kb
        record = audited.record
        files: dict[tuple[str, str], str] = {}
        resolved = []
        for item in record.context:
            key = (item.path, item.commit or "HEAD")
            try:
                if key not in files:
                    files[key] = read_cited_file(kb, self.workspace.tenant, item)
                resolved.append(ResolvedInterval(item, files[key]))
            except KbmemError as exc:
                resolved.append(ResolvedInterval(item, "", error_text(exc)))
        reasoning = ""
        if audited.committed:
            path = turn_dir(record.tenant, record.chat_id, record.turn) + "reasoning.md"
            try:
                reasoning = kb.read_bytes(path).decode("utf-8", "replace")
            except KbmemError:
                reasoning = ""
        reasoning = reasoning or render_reasoning(record)
        if not self.kbmem.show_times:
            reasoning = _without_times(reasoning)
        self.app.call_from_thread(self._show_details, audited, resolved, reasoning)

    async def _show_details(
        self, audited: AuditedTurn, resolved: list[ResolvedInterval], reasoning: str
    ) -> None:
        if self.current is None or self.current.turn_id != audited.turn_id:
            return
        items = self.query_one("#interval-list", ListView)
        await items.clear()
        cited = sorted(resolved, key=lambda r: (not r.item.cited, -r.item.score))
        await items.extend([IntervalCard(r) for r in cited])
        if not cited:
            await items.append(ListItem(Static(Text("The answer used no interval.", style="dim"))))
        await self.query_one("#reasoning-text", Markdown).update(reasoning)
        items.index = 0 if cited else None

    @on(ListView.Selected, "#interval-list")
    async def _interval_selected(self, event: ListView.Selected) -> None:
        if isinstance(event.item, IntervalCard):
            await self._open(event.item.resolved.item)

    async def _open(self, item: ContextItem) -> None:
        tenant = self.current.record.tenant if self.current else None
        lines = (item.start, item.end)
        await self.kbmem.open_page(item.page_id, item.commit or "HEAD", lines, tenant)

    # -- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_interval":
            return bool(self.current and self.current.record.context) or None
        if action == "commit_now":
            session = self.kbmem.chat.session
            return bool(session is not None and session.pending_turns) or None
        return True

    def action_tab(self, name: str) -> None:
        self.query_one("#audit-tabs", TabbedContent).active = name

    async def action_open_interval(self) -> None:
        items = self.query_one("#interval-list", ListView)
        chosen = items.highlighted_child
        if isinstance(chosen, IntervalCard):
            await self._open(chosen.resolved.item)
        elif self.current and self.current.record.context:
            await self._open(self.current.record.context[0])

    def action_commit_now(self) -> None:
        self.kbmem.commit_now()

    def action_reload(self) -> None:
        self.load_turns()


def _without_times(reasoning: str) -> str:
    """reasoning.md without its wall-clock lines (for reproducible screenshots)."""
    out = []
    for line in reasoning.splitlines():
        if line.startswith("- Started:"):
            continue
        out.append(_strip_ms(line))
    return "\n".join(out) + "\n"


def _strip_ms(line: str) -> str:
    return re.sub(r", \d+ ms\)", ")", line)
