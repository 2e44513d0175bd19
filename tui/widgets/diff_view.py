"""The History screen's Diff tab: the diff of a file between two of its versions, computed
by a worker (a diff of huge versions takes a while) and shown from its top."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, get_current_worker

from kbmem.store.pagestore import path_at
from kbmem.store.repository import CommitInfo, KnowledgeBase

from ..history_data import Entry, diff_view


class DiffView(VerticalScroll):
    """Shows one diff at a time; asking for another while one is computed drops the first."""

    class DiffRead(Message):
        """A diff, laid out by ``worker``."""

        def __init__(self, diff: Group, worker: Worker[None]) -> None:
            super().__init__()
            self.diff = diff
            self.worker = worker

    def compose(self) -> ComposeResult:
        yield Static("Pick two versions on the Versions tab.", id="diff-text")

    def show(
        self, kb: KnowledgeBase, entry: Entry, old: str, new: str, versions: list[CommitInfo]
    ) -> None:
        """Compute the diff of ``entry`` from ``old`` to ``new`` (any revisions) and show it;
        ``versions`` (the file's history) says where the file was at each."""
        self.query_one("#diff-text", Static).update(Text("Computing the diff…", style="dim"))
        self.load(kb, entry, old, new, list(versions))

    @work(thread=True, exit_on_error=False, group="history-diff", exclusive=True)
    def load(
        self, kb: KnowledgeBase, entry: Entry, old: str, new: str, versions: list[CommitInfo]
    ) -> None:
        worker = get_current_worker()
        old_sha, new_sha = kb.resolve(old), kb.resolve(new)
        diff = kb.diff(
            old_sha,
            new_sha,
            path_at(kb, entry.path, old_sha, versions),
            path_at(kb, entry.path, new_sha, versions),
        )
        self.post_message(self.DiffRead(diff_view(entry, old_sha, new_sha, diff), worker))

    @on(DiffRead)
    def _show(self, message: DiffRead) -> None:
        message.stop()
        if message.worker.is_cancelled:
            return  # another diff was asked for since
        self.query_one("#diff-text", Static).update(message.diff)
        self.scroll_home(animate=False)
