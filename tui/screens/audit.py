"""The Audit screen: every turn (chat, number, time, question) as ``kbmem turns`` lists it,
committed ones from git and pending ones from the journal, a committed turn whose files cannot
be read listed as damaged with the problem; for a turn, read when chosen, the answer, every
interval it read (the ones the answer cites first) resolved at its commit with the lines
highlighted (enter jumps to the page at that commit), the tool calls, and the reasoning."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import (
    DataTable,
    ListItem,
    ListView,
    Markdown,
    Static,
    TabbedContent,
    TabPane,
)

from ..audit_data import (
    UNREADABLE,
    AuditedTurn,
    ResolvedInterval,
    TurnDetails,
    list_audited,
    newest_first,
    read_details,
)
from ..render import at_commit, markdown_parser, plain, safe
from ..widgets.call_list import CallList
from ..widgets.footer import KbmemFooter
from ..widgets.interval_view import NumberedLines
from ..widgets.status_bar import StatusBar
from ..widgets.turn_table import TurnTable
from .base import KbmemScreen

if TYPE_CHECKING:
    from kbmem.agent.records import ContextItem, TurnRecord

CONTEXT_LINES = 1


class IntervalCard(ListItem):
    """One interval a turn read (cited in the answer or only shown to the agent), as the file
    was at the interval's commit."""

    DEFAULT_CSS = """
    IntervalCard { height: auto; padding: 0 1; margin-bottom: 1; }
    IntervalCard > .head { text-style: bold; }
    IntervalCard > .problem { color: $error; }
    IntervalCard > .shown { color: $text-muted; }
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
        if self.resolved.changed_since:
            # The text below is the version the answer read, not the page as it is now.
            head.append(" · page changed since", style="bold yellow")
        if item.shown:
            head.append(" · carried in part", style="bold")
        yield Static(head, classes="head")
        if item.shown:
            # The briefing carried only part of a long turn: what the agent read is that part,
            # not the whole of the lines below.
            yield Static(plain(f"The agent was shown only:\n{item.shown}"), classes="shown")
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

    class TurnsListed(Message):
        """Every turn, listed by a worker."""

        def __init__(self, found: dict[str, AuditedTurn]) -> None:
            super().__init__()
            self.found = found

    class DetailsRead(Message):
        """What a worker read of ``audited``."""

        def __init__(self, audited: AuditedTurn, details: TurnDetails) -> None:
            super().__init__()
            self.audited = audited
            self.details = details

    def __init__(self) -> None:
        super().__init__()
        self.turns: dict[str, AuditedTurn] = {}
        self.order: list[str] = []
        self.wanted: str | None = None
        self.current: AuditedTurn | None = None
        self.recorded_in: dict[str, str] = {}  # turn id: the commit that added its snapshot

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal(id="audit-body"):
            with Vertical(id="turn-pane"):
                yield TurnTable(self.kbmem.show_times, id="turn-table", cursor_type="row")
            with Vertical(id="turn-detail"):
                yield Static("Choose a turn in the list.", id="turn-title", markup=False)
                with TabbedContent(id="audit-tabs", initial="answer"):
                    with TabPane("Answer", id="answer"), VerticalScroll():
                        yield Static(id="question")
                        yield Markdown(
                            id="answer-text", open_links=False, parser_factory=markdown_parser
                        )
                    with TabPane("Intervals", id="intervals"):
                        yield ListView(id="interval-list")
                    with TabPane("Tool calls", id="calls"):
                        yield CallList(id="call-list")
                    with TabPane("Reasoning", id="reasoning"), VerticalScroll():
                        yield Markdown(
                            id="reasoning-text", open_links=False, parser_factory=markdown_parser
                        )
        yield KbmemFooter()

    def on_mount(self) -> None:
        self.load_turns()

    def on_screen_resume(self) -> None:
        self.load_turns()

    # -- the list of turns ------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="audit-turns", exclusive=True)
    def load_turns(self) -> None:
        """The turns as ``kbmem turns`` lists them, and this session's own records."""
        self.post_message(self.TurnsListed(list_audited(self.workspace, self.kbmem.turn_records())))

    @on(TurnsListed)
    def _fill_turns(self, message: TurnsListed) -> None:
        found = self.turns = message.found
        self.order = newest_first(found)
        table = self.query_one(TurnTable)
        keep = self.wanted or (self.current.turn_id if self.current else None)
        table.fill(found, self.order)
        if not self.order:
            self.query_one("#turn-title", Static).update(
                Text("No turns yet: ask something on the Chat screen (F2).", style="dim")
            )
            return
        target = keep if keep in found else self.order[0]
        table.move_cursor(row=self.order.index(target), animate=False)
        self.wanted = None
        previous = self.current
        if previous is None or previous.summary != found[target].summary:
            self.show_turn(found[target])

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
        """Show what is known of the turn now; read the rest (the record, the intervals at
        their commits, the reasoning) in a worker."""
        self.current = audited
        self.refresh_bindings()  # "open" applies only to a turn with intervals
        self._show_head(audited)
        if audited.record is not None:
            self._show_record(audited.record)
        else:
            self._show_unread(audited)
        self.load_details(audited)

    def _show_head(self, audited: AuditedTurn) -> None:
        r = audited.record
        where = "committed" if audited.committed else "pending (journaled, not committed yet)"
        title = Text.assemble((f"turn {audited.turn_id}", "bold"))
        if r is not None:
            title.append(f" · {r.agent}" + (f" · {r.model}" if r.model else "") + f" · {r.status}")
        elif audited.damaged:
            title.append(" · damaged", style="bold red")
        recorded = self.recorded_in.get(audited.turn_id) if audited.committed else None
        if recorded:
            where += f" in {at_commit(recorded)}"
        title.append(f" · {where}", style="dim")
        if audited.damaged:
            # Readable wherever the tabs are: the turn's files, and what is wrong with them.
            title.append("\nThis turn's files cannot be read: ", style="bold red")
            title.append(audited.problem, style="red")
        self.query_one("#turn-title", Static).update(title)

    def _show_record(self, record: TurnRecord) -> None:
        self.query_one("#question", Static).update(
            Text.assemble(("Question: ", "bold"), safe(record.question))
        )
        answer = record.answer
        if record.error:
            answer += f"\n\n*{record.status}: {record.error}*"
        self.query_one("#answer-text", Markdown).update(safe(answer))
        self.query_one(CallList).show(record, self.kbmem.show_times)

    def _show_unread(self, audited: AuditedTurn) -> None:
        """The question from the list; no answer, calls or intervals: not read yet, or
        unreadable (a damaged turn)."""
        question = audited.summary.question
        self.query_one("#question", Static).update(
            Text.assemble(("Question: ", "bold"), safe(question) or ("(unknown)", "dim"))
        )
        note = f"*{UNREADABLE.format(what='answer')}*" if audited.damaged else ""
        self.query_one("#answer-text", Markdown).update(note)
        calls = UNREADABLE.format(what="tool calls") if audited.damaged else ""
        self.query_one(CallList).show_note(calls)

    @work(thread=True, exit_on_error=False, group="audit-turn", exclusive=True)
    def load_details(self, audited: AuditedTurn) -> None:
        details = read_details(self.workspace, audited, self.kbmem.show_times)
        self.post_message(self.DetailsRead(audited, details))

    @on(DetailsRead)
    async def _show_details(self, message: DetailsRead) -> None:
        audited, details = message.audited, message.details
        record = details.record
        if details.recorded:
            self.recorded_in[audited.turn_id] = details.recorded
        if self.current is not audited:
            return
        newly_read = audited.record is None and record is not None
        audited.record, audited.problem = record, details.problem
        self._show_head(audited)  # with the commit that recorded the turn, known now
        if newly_read and record is not None:
            self._show_record(record)
        elif record is None:
            self._show_unread(audited)
        self.refresh_bindings()
        await self._show_intervals(details.resolved, record is not None)
        await self.query_one("#reasoning-text", Markdown).update(safe(details.reasoning))

    async def _show_intervals(self, resolved: list[ResolvedInterval], readable: bool) -> None:
        """The Intervals tab: the cited intervals first, then the others the agent was shown."""
        items = self.query_one("#interval-list", ListView)
        await items.clear()
        ordered = sorted(resolved, key=lambda r: (not r.item.cited, -r.item.score))
        await items.extend([IntervalCard(r) for r in ordered])
        if not readable:
            note = UNREADABLE.format(what="intervals")
            await items.append(ListItem(Static(Text(note, style="dim"))))
        elif not ordered:
            await items.append(ListItem(Static(Text("The turn read no interval.", style="dim"))))
        items.index = 0 if ordered else None

    @on(ListView.Selected, "#interval-list")
    async def _interval_selected(self, event: ListView.Selected) -> None:
        if isinstance(event.item, IntervalCard):
            await self._open(event.item.resolved.item)

    async def _open(self, item: ContextItem) -> None:
        tenant = self.current.record.tenant if self.current and self.current.record else None
        lines = (item.start, item.end)
        await self.kbmem.open_page(item.page_id, item.commit or "HEAD", lines, tenant)

    # -- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_interval":
            return bool(self._turn_intervals()) or None
        if action == "commit_now":
            session = self.kbmem.chat.session
            return bool(session is not None and session.pending_turns) or None
        return True

    def _turn_intervals(self) -> list[ContextItem]:
        from kbmem.agent.provenance import turn_intervals

        record = self.current.record if self.current else None
        return turn_intervals(record) if record is not None else []

    def action_tab(self, name: str) -> None:
        self.query_one("#audit-tabs", TabbedContent).active = name

    async def action_open_interval(self) -> None:
        items = self.query_one("#interval-list", ListView)
        chosen = items.highlighted_child
        if isinstance(chosen, IntervalCard):
            await self._open(chosen.resolved.item)
        elif context := self._turn_intervals():
            await self._open(context[0])

    def action_commit_now(self) -> None:
        self.kbmem.commit_now()

    def action_reload(self) -> None:
        self.load_turns()
