"""The index build's progress under the conversation: a bar, the intervals indexed of all,
and an estimate of the time left. Shown only while a sync runs (``App.index_progress``)."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from ..indexing import BuildProgress
from ..render import progress_text


class IndexProgress(Horizontal):
    """Follows ``App.index_progress`` (None: hidden). Counts and the estimate change as the
    sync reports, a step of the build at a time."""

    DEFAULT_CSS = """
    IndexProgress { height: 1; margin: 0 1; display: none; }
    IndexProgress > .what { width: auto; color: $text-warning; text-style: bold; }
    IndexProgress > ProgressBar { width: auto; margin: 0 1; }
    IndexProgress > .counts { width: 1fr; color: $text-muted; }
    """

    shown: BuildProgress | None = None

    def compose(self) -> ComposeResult:
        yield Static("Building the index", classes="what", markup=False)
        # Determinate while hidden: an indeterminate bar redraws itself 15 times a second.
        yield ProgressBar(total=1, show_eta=False)
        yield Static("", classes="counts", markup=False)

    def on_mount(self) -> None:
        self.watch(self.app, "index_progress", self._show)

    def _show(self, progress: BuildProgress | None) -> None:
        self.shown = progress
        self.display = progress is not None
        bar = self.query_one(ProgressBar)
        if progress is None:
            bar.update(total=1, progress=0)
            return
        if progress.total:
            bar.update(total=progress.total, progress=progress.done)
        else:  # the count is not known until the build's first step
            bar.update(total=None)
        elapsed = time.monotonic() - progress.started
        self.query_one(".counts", Static).update(
            progress_text(progress.done, progress.total, elapsed)
        )

    @property
    def counts(self) -> str:
        """What the counts line says now (for tests and the benchmark)."""
        return str(self.query_one(".counts", Static).content)
