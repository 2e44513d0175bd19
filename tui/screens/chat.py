"""The Chat screen: the conversation (replies streamed as Markdown, citations selectable), a
message box with history, and a side panel that fills live with the turn's research trace."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import OptionList
from textual.worker import Worker, WorkerState

from kbmem.config import MAX_REQUEST_CHARS

from ..widgets.chat_log import (
    AgentReply,
    Citation,
    PromptInput,
    Suggestions,
    UserMessage,
    suggested_questions,
    turn_foot,
)
from ..widgets.follow import FollowScroll
from ..widgets.footer import KbmemFooter
from ..widgets.status_bar import StatusBar
from ..widgets.trace import TracePanel
from .base import KbmemScreen
from .interval import IntervalScreen
from .prompt import ChoiceScreen

EXCERPT_CHARS = 90


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

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal(id="chat-body"):
            with Vertical(id="conversation"):
                yield FollowScroll(id="chat-log")
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
        import yaml

        from kbmem.memorize.sessions import is_chat

        ws = self.workspace
        kb = ws.kb
        readme = ""
        if kb.head() is not None and kb.blob_id("README.md") is not None:
            readme = kb.read_bytes("README.md").decode("utf-8", "replace")
        store = ws.store()
        titles: list[tuple[str, str]] = []
        for path in kb.list_files(f"{store.prefix}sessions/"):
            try:
                data = yaml.safe_load(kb.read_bytes(path))
            except yaml.YAMLError:
                continue
            if not isinstance(data, dict) or not data.get("title"):
                continue
            if is_chat(PurePosixPath(path).stem):
                continue  # the chats themselves, memorized
            titles.append((str(data.get("created_at") or ""), str(data["title"])))
        titles.sort(reverse=True)
        notes = []
        for page_id in sorted(store.files()):
            if page_id.endswith(".md"):
                try:
                    notes.append(str(store.read(page_id).page.meta.get("title") or page_id))
                except Exception:  # a malformed note is skipped, as the index does
                    continue
        questions = suggested_questions(readme, [t for _d, t in titles], notes)
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
    def run_turn(self, text: str) -> Any:
        return self.kbmem.chat.send(text, on_event=self._event_from_thread)

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
                self.kbmem.remember_turn(record)
                if self.reply is not None:
                    self.reply.remember_intervals([c.to_dict() for c in record.context])

    # -- the turn's events ------------------------------------------------------------------

    @on(AgentEventReceived)
    async def _agent_event(self, message: AgentEventReceived) -> None:
        # Dispatch on ``kind``: importing kbmem.agent here would load the researcher (and
        # its indexes) before the first paint.
        event = message.event
        kind = event.kind
        panel = self.query_one(TracePanel)
        reply = self.reply
        if kind == "turn_started":
            self.last_turn_id = f"{event.chat_id}/{event.turn}"
            if reply is not None:
                who = f"kbmem · turn {event.turn} · {event.agent}"
                reply.name_turn(who + (f" · {event.model}" if event.model else ""))
            await panel.start_turn(event.turn, event.message, event.agent, event.model)
        elif kind == "tool_call_started":
            panel.tool_call_started(event.call_id, event.name, event.arguments)
            if event.name == "research" and self.kbmem.status.syncing:
                panel.note(event.call_id, "waiting for the index to reach the latest commit…")
            self.kbmem.set_status(busy=f"{event.name}…")
        elif kind == "research_trace":
            trace = event.trace
            panel.research_step(event.call_id, trace.kind, trace.step, trace.data)
        elif kind == "tool_call_finished":
            panel.tool_call_finished(
                event.call_id,
                event.name,
                event.arguments,
                event.duration_ms if self.kbmem.show_times else None,
                event.intervals,
                event.error,
            )
            if reply is not None:
                reply.remember_intervals(event.intervals)
            if event.error:
                self.notify(
                    event.error, title=f"{event.name} failed", severity="warning", markup=False
                )
            elif event.intervals:
                question = event.arguments.get("request") or event.arguments.get("query")
                self.read_excerpts(event.call_id, event.intervals, str(question or ""))
            self.kbmem.set_status(busy="answering…")
        elif kind == "reply_delta":
            if reply is not None:
                await reply.write(event.text)
                self.query_one("#chat-log", FollowScroll).follow()
        elif kind == "turn_finished":
            self.running = False
            panel.turn_finished()
            self.kbmem.set_status(busy="")
            if reply is not None:
                status = self.kbmem.status
                foot = turn_foot(
                    status.engine,
                    status.model,
                    event.status,
                    event.duration_ms,
                    self.kbmem.show_times,
                )
                await reply.finish(event.status, event.answer, error=event.error, foot=foot)
            if event.status == "failed":
                self.notify(
                    event.error or "unknown error",
                    title="The turn failed",
                    severity="error",
                    markup=False,
                )
                self.query_one("#chat-log", FollowScroll).follow()
            self.kbmem.chat_event(event)
        elif kind in ("batch_committed", "notice"):
            self.kbmem.chat_event(event)

    @work(thread=True, exit_on_error=False, group="excerpts")
    def read_excerpts(
        self, call_id: str, intervals: list[dict[str, Any]], question: str = ""
    ) -> None:
        """Read each hit at its commit; its excerpt is the part that answers ``question``."""
        from kbmem.agent.offline import best_excerpt  # the index's analyzer: load it off-screen
        from kbmem.store.pages import unescape_line

        kb = self.workspace.kb
        files: dict[tuple[str, str], list[str]] = {}
        excerpts: dict[str, str] = {}
        for iv in intervals:
            path, commit = str(iv.get("path") or ""), str(iv.get("commit") or "HEAD")
            key = (path, commit)
            if key not in files:
                files[key] = kb.read_bytes(path, commit).decode("utf-8", "replace").split("\n")
            lines = files[key][int(iv["start"]) - 1 : int(iv["end"])]
            body = [line for line in lines if not line.startswith("### ")] or lines
            text = "\n".join(unescape_line(line) for line in body)
            excerpts[f"{path}#{iv['start']}-{iv['end']}"] = best_excerpt(
                text, question, EXCERPT_CHARS
            )
        self.post_message(self.ExcerptsRead(call_id, excerpts))

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
