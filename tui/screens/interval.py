"""A cited interval in a dialog: the lines as they were at the commit the answer used, with a
little context, and a way on to the whole page at that commit (History screen)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from ..render import at_commit, error_text, plain
from ..widgets.chat_log import Citation
from ..widgets.footer import KbmemFooter
from ..widgets.interval_view import NumberedLines

if TYPE_CHECKING:
    from ..app import KbmemApp

CONTEXT_LINES = 4


class IntervalScreen(ModalScreen[None]):
    """Shows one citation; ``h`` opens its page at that commit in History."""

    CSS_PATH = "interval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("h", "open_page", "Open page at this commit"),
    ]

    class IntervalRead(Message):
        """The cited file's text at ``commit``, read by a worker."""

        def __init__(self, commit: str, text: str) -> None:
            super().__init__()
            self.commit = commit
            self.text = text

    def __init__(self, citation: Citation, tenant: str):
        super().__init__()
        self.citation = citation
        self.tenant = tenant
        self.commit = citation.commit

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self._title(), id="interval-title")
            yield VerticalScroll(Static(Text("Reading…", style="dim")), id="interval-body")
        yield KbmemFooter()

    def _title(self) -> Text:
        return Text.assemble((self.citation.label, "bold"), (f" {at_commit(self.commit)}", "dim"))

    def on_mount(self) -> None:
        self.read_interval()

    @work(thread=True, exit_on_error=False, group="interval")
    def read_interval(self) -> None:
        app = cast("KbmemApp", self.app)
        kb = app.workspace.kb
        store = app.workspace.store(self.tenant)
        path = self.citation.path or store.path_of(self.citation.page_id)
        commit = kb.resolve(self.citation.commit or "HEAD")
        text = kb.read_bytes(path, commit).decode("utf-8", "replace")
        self.post_message(self.IntervalRead(commit, text))

    @on(IntervalRead)
    async def _show(self, message: IntervalRead) -> None:
        commit, text = message.commit, message.text
        self.commit = commit
        self.query_one("#interval-title", Static).update(self._title())
        body = self.query_one("#interval-body", VerticalScroll)
        await body.remove_children()
        lines = NumberedLines(text, self.citation.start, self.citation.end, CONTEXT_LINES)
        await body.mount(lines)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            body = self.query_one("#interval-body", VerticalScroll)
            body.remove_children()
            body.mount(Static(plain(error_text(event.worker.error), "bold red")))
            cast("KbmemApp", self.app).report_failure(event.worker.error, "interval")

    async def action_open_page(self) -> None:
        app = cast("KbmemApp", self.app)
        self.dismiss()
        await app.open_page(
            self.citation.page_id,
            self.commit or "HEAD",
            (self.citation.start, self.citation.end),
            self.tenant,
        )
