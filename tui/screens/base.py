"""What every kbmem screen shares: the status bar, the footer, and turning a failed worker
into a toast (markup off) instead of a crash."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import on
from textual.screen import Screen
from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from ..app import KbmemApp
    from ..workspace import Workspace


class KbmemScreen(Screen[None]):
    """Base of the Chat, History and Audit screens."""

    @property
    def kbmem(self) -> KbmemApp:
        return cast("KbmemApp", self.app)

    @property
    def workspace(self) -> Workspace:
        return self.kbmem.workspace

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.kbmem.report_failure(event.worker.error, event.worker.group)
