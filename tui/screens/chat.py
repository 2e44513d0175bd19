"""The Chat screen: the conversation (replies streamed as Markdown, citations selectable), a
message box with history, and a side panel that fills live with the turn's research trace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import OptionList
from textual.worker import Worker, WorkerState

from kbmem.config import MAX_REQUEST_CHARS
from kbmem.errors import Cancelled

from ..reading import hit_excerpts, suggestion_sources
from ..widgets.chat_log import (
    AgentReply,
    Citation,
    PromptInput,
    Suggestions,
    UserMessage,
    suggested_questions,
)
from ..widgets.follow import FollowScroll
from ..widgets.footer import KbmemFooter
from ..widgets.index_progress import IndexProgress
from ..widgets.status_bar import StatusBar
from ..widgets.trace import TracePanel
from .base import KbmemScreen
from .chat_turn import TurnEvents
from .interval import IntervalScreen
from .prompt import ChoiceScreen

if TYPE_CHECKING:
    from kbmem.agent.records import TurnRecord


class ChatScreen(KbmemScreen):
    """Ask the memory; watch the research happen; follow the citations."""

    CSS_PATH = "chat.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "toggle_trace", "Trace"),
        Binding("ctrl+o", "citations", "Citations"),
        Binding("escape", "cancel_turn", "Stop", show=False),
        Binding("ctrl+n", "new_chat", "New chat"),
    ]

    class AgentEventReceived(Message):
        """An event of the running turn, forwarded from the worker thread."""

        def __init__(self, event: Any) -> None:
            super().__init__()
            self.event = event

    class ExcerptsRead(Message):
        """Excerpts of a tool call's intervals, read at their commits by a worker."""

        def __init__(self, call_id: str, excerpts: dict[str, str]) -> None:
            super().__init__()
            self.call_id = call_id
            self.excerpts = excerpts

    def __init__(self) -> None:
        super().__init__()
        self.reply: AgentReply | None = None
        self.running = False
        self.turns = 0
        self.last_turn_id: str | None = None
        self.turn_events = TurnEvents(self)

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal(id="chat-body"):
            with Vertical(id="conversation"):
                yield FollowScroll(id="chat-log")
                yield IndexProgress(id="index-progress")
                yield PromptInput(
                    id="prompt",
                    placeholder="Ask the memory…  (enter: send · ctrl+j: new line · ↑: history)",
                    short_placeholder="Ask the memory…  (↑: history)",
                )
            yield TracePanel(show_times=self.kbmem.show_times, id="trace")
        yield KbmemFooter()

    def on_mount(self) -> None:
        prompt = self.query_one(PromptInput)
        prompt.cursor_blink = self.kbmem.cursor_blink
        prompt.focus()
        self.call_after_refresh(self.kbmem.mark, "first_paint")
        if self.kbmem.suggestions:
            self.load_suggestions()

    def reset(self) -> None:
        """A new chat: clear the conversation and the trace."""
        self.query_one("#chat-log", FollowScroll).remove_children()
        self.query_one(TracePanel).remove_children()
        self.reply = None
        self.turns = 0
        if self.kbmem.suggestions:
            self.load_suggestions()

    # -- suggested questions ----------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="suggestions")
    def load_suggestions(self) -> None:
        questions = suggested_questions(*suggestion_sources(self.workspace))
        if questions:
            self.app.call_from_thread(self._show_suggestions, questions)

    def _show_suggestions(self, questions: list[str]) -> None:
        log = self.query_one("#chat-log", FollowScroll)
        if self.turns == 0 and not log.query(Suggestions):
            log.append(
                Suggestions(
                    f"Ask the memory of {self.workspace.kb_label} (tenant "
                    f"{self.workspace.tenant}) anything, for example:",
                    questions,
                )
            )

    @on(PromptInput.DownFromEnd)
    def _down_from_prompt(self) -> None:
        for suggestions in self.query(Suggestions):
            options = suggestions.query_one(OptionList)
            options.focus()
            if options.highlighted is None:
                options.highlighted = 0

    @on(Suggestions.QuestionChosen)
    def _suggestion(self, event: Suggestions.QuestionChosen) -> None:
        self.query_one(PromptInput).remember(event.question)  # ↑ brings it back, as if typed
        self.send(event.question)

    # -- sending ----------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    def _submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text.strip()
        if not text:
            return
        if self.running:
            self.notify(
                "A turn is still running (escape stops it).", severity="warning", markup=False
            )
            return
        if len(text) > MAX_REQUEST_CHARS:
            # Refused here, the text kept to shorten: the chat would refuse it anyway.
            self.notify(
                f"The message is {len(text):,} characters long; the limit is "
                f"{MAX_REQUEST_CHARS:,}. Shorten it and send again.",
                title="Message too long",
                severity="warning",
                markup=False,
            )
            return
        prompt = self.query_one(PromptInput)
        prompt.remember(text)
        prompt.take(event.text)
        self.send(text)

    def send(self, text: str) -> None:
        """Show the question and start the turn in a worker."""
        self.query_one(PromptInput).focus()
        log = self.query_one("#chat-log", FollowScroll)
        for suggestions in log.query(Suggestions):
            suggestions.remove()
        self.running = True
        self.turns += 1
        self.reply = AgentReply("kbmem · thinking…")
        log.append(UserMessage(text), self.reply)
        self.kbmem.set_status(busy="researching…")
        self.run_turn(text)

    @work(thread=True, exit_on_error=False, group="chat-send")
    def run_turn(self, text: str) -> TurnRecord | None:
        """The turn, after the index is brought to HEAD (the first one's build shows its
        progress); None when it was stopped before it started."""
        chat = self.kbmem.chat
        try:
            return chat.send(text, self._event_from_thread, self.kbmem.index_sync.bring_to_head)
        except Cancelled:
            return None

    def _event_from_thread(self, event: Any) -> None:
        self.post_message(self.AgentEventReceived(event))

    @on(Worker.StateChanged)
    async def _turn_worker(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "chat-send":
            return
        if event.state == WorkerState.ERROR:
            # The toast comes from the base class; the reply must not wait forever.
            self.running = False
            self.kbmem.set_status(busy="")
            if self.reply is not None and not self.reply.finished:
                error = event.worker.error
                await self.reply.finish("failed", "", error=str(error) if error else None)
        elif event.state == WorkerState.SUCCESS:
            record = event.worker.result
            if record is not None:
                self.kbmem.chat.remember(record)
                if self.reply is not None:
                    self.reply.remember_intervals([c.to_dict() for c in record.context])
            else:  # stopped while the index was brought up to date: no turn started
                self.running = False
                self.kbmem.set_status(busy="")
                if self.reply is not None and not self.reply.finished:
                    await self.reply.finish("interrupted", "")

    # -- the turn's events ------------------------------------------------------------------

    @on(AgentEventReceived)
    async def _agent_event(self, message: AgentEventReceived) -> None:
        await self.turn_events.show(message.event)

    @work(thread=True, exit_on_error=False, group="excerpts")
    def read_excerpts(
        self, call_id: str, intervals: list[dict[str, Any]], question: str = ""
    ) -> None:
        """Read each hit at its commit; its excerpt is the part that answers ``question``."""
        self.post_message(
            self.ExcerptsRead(call_id, hit_excerpts(self.workspace, intervals, question))
        )

    @on(ExcerptsRead)
    def _excerpts(self, message: ExcerptsRead) -> None:
        self.query_one(TracePanel).add_excerpts(message.call_id, message.excerpts)

    # -- citations --------------------------------------------------------------------------

    @on(AgentReply.CitationChosen)
    def _citation(self, event: AgentReply.CitationChosen) -> None:
        self.open_citation(event.citation)

    def open_citation(self, citation: Citation) -> None:
        self.app.push_screen(IntervalScreen(citation, self.workspace.tenant))

    def action_citations(self) -> None:
        """Choose one of the latest answer's citations to read."""
        replies = [r for r in self.query(AgentReply) if r.citations]
        if not replies:
            self.notify("No answer with citations yet.", markup=False, timeout=3)
            return
        reply = replies[-1]
        choices = [(str(n), c.label) for n, c in enumerate(reply.citations)]

        def chosen(value: str | None) -> None:
            if value is not None:
                self.open_citation(reply.citations[int(value)])

        self.app.push_screen(ChoiceScreen("Open which citation?", choices), chosen)

    # -- other actions ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_turn":
            return self.running
        return True

    def action_cancel_turn(self) -> None:
        self.kbmem.chat.cancel()
        self.notify("Stopping the turn…", markup=False, timeout=2)

    def action_toggle_trace(self) -> None:
        panel = self.query_one(TracePanel)
        panel.display = not panel.display

    def action_new_chat(self) -> None:
        self.kbmem.new_chat()
