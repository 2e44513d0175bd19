"""The Audit screen: every turn (chat, number, time, question) as ``kbmem turns`` lists it,
committed ones from git and pending ones from the journal, a committed turn whose files cannot
be read listed as damaged with the problem; for a turn, read when chosen, the answer, every
interval it read (the ones the answer cites first) resolved at its commit with the lines
highlighted (enter jumps to the page at that commit), the tool calls, and the reasoning."""

from __future__ import annotations

import re
from contextlib import suppress
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
    ListItem,
    ListView,
    Markdown,
    Static,
    TabbedContent,
    TabPane,
)

from kbmem.errors import KbmemError

from ..render import at_commit, error_text, markdown_parser, one_line, plain, safe
from ..widgets.footer import KbmemFooter
from ..widgets.interval_view import NumberedLines
from ..widgets.status_bar import StatusBar
from ..widgets.trace import ToolCallView, hit_line
from .base import KbmemScreen

if TYPE_CHECKING:
    from kbmem.agent.provenance import TurnSummary
    from kbmem.agent.records import ContextItem, TurnRecord

CONTEXT_LINES = 1
QUESTION_CHARS = 30  # of the question in the list of turns
UNREADABLE = "This turn is damaged: its {what} cannot be read (the problem is above)."


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
    """A turn of the list: its summary (from :func:`~kbmem.agent.provenance.list_turns`), and
    its record once read (None until then, and for a damaged turn)."""

    summary: TurnSummary
    record: TurnRecord | None = None
    problem: str = ""  # why the turn cannot be read (a damaged turn's, or found on reading)

    def __post_init__(self) -> None:
        if self.summary.problem and not self.problem:
            self.problem = self.summary.problem

    @property
    def turn_id(self) -> str:
        return self.summary.turn_id

    @property
    def committed(self) -> bool:
        return self.summary.committed

    @property
    def damaged(self) -> bool:
        return bool(self.problem)


@dataclass
class ResolvedInterval:
    """A context item with the file's text at the item's commit (or why it is unreadable),
    and whether the page at HEAD differs from that version."""

    item: ContextItem
    text: str
    problem: str = ""
    changed_since: bool = False


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
                table: DataTable[Text] = DataTable(id="turn-table", cursor_type="row")
                table.border_title = "Turns"
                yield table
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
                        yield VerticalScroll(id="call-list")
                    with TabPane("Reasoning", id="reasoning"), VerticalScroll():
                        yield Markdown(
                            id="reasoning-text", open_links=False, parser_factory=markdown_parser
                        )
        yield KbmemFooter()

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
        """The turns as ``kbmem turns`` lists them (a damaged one included, with its
        problem), each read once (an open chat's journal lines of turns git has are passed
        over), and this session's own records, which the journal may not show yet."""
        from kbmem.agent.provenance import TurnSummary, list_turns

        ws = self.workspace
        ws.check_available()
        found = {s.turn_id: AuditedTurn(s) for s in list_turns(ws.kb, ws.tenant).turns}
        for record in self.kbmem.turn_records():
            if record.tenant != ws.tenant:
                continue
            audited = found.get(record.turn_id)
            if audited is None:
                summary = TurnSummary(
                    record.chat_id,
                    record.turn,
                    record.question,
                    record.status,
                    record.started_at,
                    False,
                )
                found[record.turn_id] = AuditedTurn(summary, record)
            elif not audited.committed:
                audited.record = record  # shown as it is, without reading the journal back
        self.app.call_from_thread(self._fill_turns, found)

    def _fill_turns(self, found: dict[str, AuditedTurn]) -> None:
        self.turns = found
        self.order = sorted(
            found,
            key=lambda t: (
                found[t].summary.started_at,
                found[t].summary.chat_id,
                found[t].summary.turn,
            ),
            reverse=True,
        )
        table = self.query_one("#turn-table", DataTable)
        keep = self.wanted or (self.current.turn_id if self.current else None)
        table.clear()
        for turn_id in self.order:
            audited = found[turn_id]
            s = audited.summary
            if audited.damaged:
                where = plain("✗", "bold red")
            elif audited.committed:
                where = plain("✓", "green")
            else:
                where = plain("●", "yellow")
            cells = [where, plain(short_chat_id(s.chat_id), "dim"), plain(str(s.turn))]
            if self.kbmem.show_times:
                cells.append(plain(self._time(s.started_at)))
            # A status other than complete goes first; the column stays as wide.
            status = "" if s.status == "complete" else f"{s.status} "
            question = Text.assemble(
                (status, "bold red" if audited.damaged else "bold yellow"),
                plain(one_line(s.question, QUESTION_CHARS - len(status))),
            )
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
        if previous is None or previous.summary != found[target].summary:
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
        self._fill_calls(record)

    def _show_unread(self, audited: AuditedTurn) -> None:
        """The question from the list; no answer, calls or intervals: not read yet, or
        unreadable (a damaged turn)."""
        question = audited.summary.question
        self.query_one("#question", Static).update(
            Text.assemble(("Question: ", "bold"), safe(question) or ("(unknown)", "dim"))
        )
        note = f"*{UNREADABLE.format(what='answer')}*" if audited.damaged else ""
        self.query_one("#answer-text", Markdown).update(note)
        calls = self.query_one("#call-list", VerticalScroll)
        calls.remove_children()
        if audited.damaged:
            calls.mount(Static(Text(UNREADABLE.format(what="tool calls"), style="dim")))

    def _fill_calls(self, record: TurnRecord) -> None:
        calls = self.query_one("#call-list", VerticalScroll)
        calls.remove_children()
        if not record.tool_calls:
            calls.mount(Static(Text("No tool calls.", style="dim")))
            return
        for call in record.tool_calls:
            view = ToolCallView(call.name, call.arguments)
            hits = []
            for iv in call.intervals:
                start, end = int(iv.get("start", 0)), int(iv.get("end", 0))
                hit = hit_line(str(iv.get("page_id")), start, end)
                hit.append(f" {safe(at_commit(str(iv.get('commit') or '')))}", style="dim")
                hits.append(hit)
            view.finish(
                hits,
                call.duration_ms if self.kbmem.show_times else None,
                call.error,
            )
            calls.mount(view)

    @work(thread=True, exit_on_error=False, group="audit-turn", exclusive=True)
    def load_details(self, audited: AuditedTurn) -> None:
        """Read the turn (from git if committed, else from the journal) unless it is known;
        resolve every interval at its commit (only the tenant's own pages are read); read
        the committed reasoning (a damaged turn's too, when that file is readable)."""
        from kbmem.agent.provenance import (
            load_turn,
            read_cited_file,
            render_reasoning,
            resolve_item,
            turn_dir,
            turn_intervals,
        )

        kb = self.workspace.kb
        tenant = self.workspace.tenant
        s = audited.summary
        record, problem = audited.record, audited.problem
        if record is None and not problem:
            try:
                record, _committed = load_turn(kb, tenant, s.chat_id, s.turn)
            except (KbmemError, ValueError) as exc:  # damaged, or gone, since it was listed
                problem = error_text(exc)
        files: dict[tuple[str, str], str] = {}
        resolved = []
        # Every interval the turn read (as `kbmem audit` lists them), cited or not.
        for item in turn_intervals(record) if record is not None else []:
            # As `kbmem audit` resolves it: lines outside the file are a problem, and a page
            # that changed after the answer read it is said to have.
            checked = resolve_item(kb, tenant, item)
            if checked.error:
                resolved.append(ResolvedInterval(item, "", checked.error))
                continue
            key = (item.path, item.commit or "HEAD")
            try:
                if key not in files:
                    files[key] = read_cited_file(kb, tenant, item)
                resolved.append(ResolvedInterval(item, files[key], "", checked.changed_since))
            except KbmemError as exc:
                resolved.append(ResolvedInterval(item, "", error_text(exc)))
        reasoning, recorded = "", None
        if audited.committed:
            folder = turn_dir(tenant, s.chat_id, s.turn)
            # The commit that added the snapshot (a later hand edit does not move it).
            with suppress(KbmemError):
                history = kb.log(folder + "answer.md")
                recorded = history[-1].sha if history else None
            path = folder + "reasoning.md"
            try:
                reasoning = kb.read_bytes(path).decode("utf-8", "replace")
            except KbmemError:
                reasoning = ""
        if not reasoning and record is not None:
            reasoning = render_reasoning(record)
        if not self.kbmem.show_times:
            reasoning = _without_times(reasoning)
        self.app.call_from_thread(
            self._show_details, audited, record, problem, resolved, reasoning, recorded
        )

    async def _show_details(
        self,
        audited: AuditedTurn,
        record: TurnRecord | None,
        problem: str,
        resolved: list[ResolvedInterval],
        reasoning: str,
        recorded: str | None,
    ) -> None:
        if recorded:
            self.recorded_in[audited.turn_id] = recorded
        if self.current is not audited:
            return
        newly_read = audited.record is None and record is not None
        audited.record, audited.problem = record, problem
        self._show_head(audited)  # with the commit that recorded the turn, known now
        if newly_read and record is not None:
            self._show_record(record)
        elif record is None:
            self._show_unread(audited)
        self.refresh_bindings()
        items = self.query_one("#interval-list", ListView)
        await items.clear()
        # The cited intervals first, then the others the agent was shown.
        ordered = sorted(resolved, key=lambda r: (not r.item.cited, -r.item.score))
        await items.extend([IntervalCard(r) for r in ordered])
        if record is None:
            note = UNREADABLE.format(what="intervals")
            await items.append(ListItem(Static(Text(note, style="dim"))))
        elif not ordered:
            await items.append(ListItem(Static(Text("The turn read no interval.", style="dim"))))
        await self.query_one("#reasoning-text", Markdown).update(safe(reasoning))
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
