"""Getting the tenant's index ready from the app's worker threads, reporting to the UI: the
embedding model loaded ahead of the first search, and the index brought to HEAD. The app's own
sync, the chat's warm-up and a turn about to research all go through :class:`IndexSync`, so
whichever of them builds the index shows its progress."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from kbmem.errors import Cancelled, KbmemError

from .render import short_sha

if TYPE_CHECKING:
    from kbmem.index.freshness import IndexStatus
    from kbmem.index.tenant import SyncReport, TenantIndex

    from .app import KbmemApp

WAIT_STEP_S = 0.1  # how often a sync waiting for the app's other one looks at its cancel event


@dataclass(frozen=True)
class BuildProgress:
    """How far a running sync is: ``done`` of ``total`` intervals (0 of 0 before the first
    report), since ``started`` (``time.monotonic()``)."""

    started: float
    done: int = 0
    total: int = 0


class IndexSync:
    """Brings the tenant's index to HEAD for ``app``: in a worker of the app's (:meth:`start`)
    or in the caller's worker thread (:meth:`bring_to_head`). One sync at a time within the
    app: a second caller waits for the first, then finds the index current. What happens is
    posted to the app as the messages below (thread-safe). Also preloads the embedding
    model (:meth:`preload_embedder`)."""

    class Looked(Message):
        """The index was looked at: it reflects ``commit`` (None: not built)."""

        def __init__(self, commit: str | None) -> None:
            super().__init__()
            self.commit = commit

    class Started(Message):
        """A sync started: the index is behind HEAD (or a rebuild was asked for)."""

        def __init__(self, progress: BuildProgress) -> None:
            super().__init__()
            self.progress = progress

    class Progressed(Message):
        """The running sync has indexed ``progress.done`` of ``progress.total`` intervals."""

        def __init__(self, progress: BuildProgress) -> None:
            super().__init__()
            self.progress = progress

    class Finished(Message):
        """The sync ended: the index reflects ``commit``; ``report`` is None when it stopped
        or failed (the live index is untouched then)."""

        def __init__(self, commit: str | None, report: SyncReport | None) -> None:
            super().__init__()
            self.commit = commit
            self.report = report

    def __init__(self, app: KbmemApp) -> None:
        self.app = app
        self.workspace = app.workspace
        self._one_at_a_time = threading.Lock()
        self._looker: TenantIndex | None = None  # for look(): reads only

    def start(self, full: bool = False) -> None:
        """Sync in a worker of the app's (group "index"), unless one runs already or the app
        is quitting (the next start syncs; quitting must not wait for an index build)."""
        app = self.app
        if app.quitting.is_set():
            return
        if not any(w.group == "index" and not w.is_finished for w in app.workers):
            app.run_worker(
                lambda: self._in_worker(full),
                group="index",
                thread=True,
                exit_on_error=False,
            )

    def look(self) -> IndexStatus:
        """How far the tenant's index is behind HEAD, and a build in any process (call from
        a worker: the first call imports the index)."""
        if self._looker is None:
            from kbmem.index.tenant import TenantIndex

            self._looker = TenantIndex(self.workspace.kb, self.workspace.tenant)
        return self._looker.status()

    def preload_embedder(self) -> None:
        """Load the embedding model in a worker of the app's (group "embedder"), showing
        whether it is ready in the status bar: the first search then need not wait for it."""
        self.app.run_worker(self._preload, group="embedder", thread=True, exit_on_error=False)

    def _preload(self) -> None:
        from kbmem.index import embedder

        app = self.app
        try:
            embedder.preload()
        except BaseException:
            app.call_from_thread(app.set_status, embedder="failed")
            raise
        app.call_from_thread(app.set_status, embedder="ready")
        app.mark("embedder_ready")

    def _in_worker(self, full: bool) -> None:
        app = self.app
        try:
            report = self.bring_to_head(app.quitting, full)
        except Cancelled:
            return
        app.mark("index_ready")
        if report is not None and report.mode == "full":
            app.call_from_thread(
                app.notify,
                f"Index rebuilt at {short_sha(report.commit)}: {report.intervals_added} "
                f"intervals in {report.seconds:.1f} s",
                markup=False,
            )

    def bring_to_head(
        self, cancel: threading.Event | None = None, full: bool = False
    ) -> SyncReport | None:
        """Sync the index to HEAD (from scratch with ``full``); None when it already was.
        Setting ``cancel`` stops the sync, or the wait for another one, with Cancelled."""
        self._wait_turn(cancel)
        try:
            return self._sync(cancel, full)
        finally:
            self._one_at_a_time.release()

    def _wait_turn(self, cancel: threading.Event | None) -> None:
        while not self._one_at_a_time.acquire(timeout=WAIT_STEP_S):
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"the index sync of tenant {self.workspace.tenant} was stopped")

    def _sync(self, cancel: threading.Event | None, full: bool) -> SyncReport | None:
        from kbmem.index.tenant import TenantIndex  # slow imports: off the UI thread

        kb = self.workspace.kb
        index = TenantIndex(kb, self.workspace.tenant)
        current = _indexed_commit(index)
        self.app.post_message(self.Looked(current))
        if current is not None and current == kb.head() and not full:
            return None
        started = time.monotonic()
        self.app.post_message(self.Started(BuildProgress(started)))

        def progress(done: int, total: int) -> None:
            self.app.post_message(self.Progressed(BuildProgress(started, done, total)))

        report = None
        try:
            report = index.sync(full=full, progress=progress, cancel=cancel)
        finally:
            self.app.post_message(self.Finished(_indexed_commit(index), report))
        return report


def _indexed_commit(index: TenantIndex) -> str | None:
    """The commit the live index reflects; None when there is none (or it cannot be read:
    the sync rebuilds it)."""
    try:
        gen = index.current()
    except KbmemError:
        return None
    return gen.commit if gen is not None else None
