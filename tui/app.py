"""The kbmem terminal app: three screens (Chat, History, Audit) as modes, a status bar, the
command palette, help; slow work (embedding model, index, chat, git) in workers.

``kbmem chat`` calls :func:`run_app`."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from kbmem.errors import Cancelled, KbmemError
from kbmem.store.repository import KnowledgeBase
from kbmem.sync.background import BackgroundSync, sync_active, sync_status

from .chat_events import FAILURE_TITLES, RepeatFilter, screens_of, show_chat_event
from .chat_service import ChatService
from .commands import KbmemCommands
from .engine_choice import choose_engine
from .indexing import BuildProgress, IndexSync
from .render import error_text
from .screens.audit import AuditScreen
from .screens.chat import ChatScreen
from .screens.help import HelpScreen
from .screens.history import HistoryScreen
from .shutdown import Shutdown
from .widgets.footer import NARROW
from .widgets.status_bar import Status
from .workspace import Workspace

log = logging.getLogger(__name__)

# How often the status bar reads the remote sync's state (local reads only; no network).
SYNC_STATUS_S = 2.0
# How often the status bar looks whether the index is behind HEAD (another process, or this
# app's own batch commit, wrote since the last sync).
INDEX_STATUS_S = 2.0
# How long quitting waits to send the last commits to the remote (then they go next time).
SYNC_ON_QUIT_S = 5.0

Marker = Callable[[str], None]


class KbmemApp(App[None]):
    """Chat with a live research trace, page history in git, and the audit of any turn."""

    CSS_PATH = "app.tcss"
    TITLE = "kbmem"
    COMMANDS = App.COMMANDS | {KbmemCommands}
    MODES: ClassVar[dict[str, Any]] = {
        "chat": ChatScreen,
        "history": HistoryScreen,
        "audit": AuditScreen,
    }
    DEFAULT_MODE = "chat"
    # A screen under NARROW columns is "-narrow": the screens' CSS gives it other layouts.
    # (Not a ClassVar: Textual declares it an attribute that an instance may set.)
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [  # noqa: RUF012
        (0, "-narrow"),
        (NARROW, "-wide"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help"),
        Binding("f2", "show('chat')", "Chat"),
        Binding("f3", "show('history')", "History"),
        Binding("f4", "show('audit')", "Audit"),
        Binding("ctrl+n", "new_chat", "New chat", show=False),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    ]

    status: var[Status] = var(Status)
    # The running index sync's progress (None: no sync runs), for the progress display.
    index_progress: var[BuildProgress | None] = var(None)

    class ChatEventReceived(Message):
        """A chat-wide event (turns recovered at start, the batch commit at close) arrived."""

        def __init__(self, event: Any) -> None:
            super().__init__()
            self.event = event

    def __init__(
        self,
        kb: KnowledgeBase,
        tenant: str,
        model: str | None = None,
        *,
        kb_label: str = "",
        chat_id: str | None = None,
        cursor_blink: bool = True,
        show_times: bool = True,
        suggestions: bool = True,
        background: bool = True,
        marker: Marker | None = None,
    ):
        """``kb_label`` names the knowledge base in the status bar (default: its folder name);
        ``chat_id`` continues or names the first chat. For reproducible screenshots:
        ``cursor_blink=False``, ``show_times=False`` (no wall-clock times or durations) and
        ``background=False`` (no model preload or index sync at start: they happen on the
        first turn, the index build with its progress shown). ``marker`` receives timing
        marks for ``kbmem bench tui`` ("first_paint", "embedder_ready", "index_ready",
        "answer")."""
        super().__init__()
        self.workspace = Workspace(kb, tenant, model, kb_label)
        self.cursor_blink = cursor_blink
        self.show_times = show_times
        self.suggestions = suggestions
        self.marker = marker
        self.background = background
        self.chat = ChatService(self.workspace, self._chat_event_from_thread, chat_id)
        self._marks: set[str] = set()
        self._toasts = RepeatFilter()
        # Set when quitting: no new index sync starts, and a running one (the app's own or the
        # chat's warm-up) stops after its current step or while it waits for the other (its
        # partial build is discarded; the live index is untouched).
        self.quitting = threading.Event()
        self.index_sync = IndexSync(self)
        self.shutdown = Shutdown(self)
        # Syncs with the git remote while the app runs (None: no remote, or sync off).
        self.remote_sync: BackgroundSync | None = None
        embedder = "loading" if background else "not loaded"
        self.set_reactive(KbmemApp.status, Status.of(self.workspace, embedder))

    # -- status, marks, failures -------------------------------------------------------------

    def set_status(self, **changes: Any) -> None:
        self.status = replace(self.status, **changes)

    def watch_status(self, old: Status, new: Status) -> None:
        # Which keys apply follows whether turns are pending (commit) and whether a turn runs
        # (cancel): grey out the footer then. Only then: a refresh re-composes every key of
        # the footer, and the status changes many times a turn (measured: 48 re-composes
        # while the model loaded, time the model's import then waited for).
        if not self.screen_stack:
            return
        if old.pending_turns != new.pending_turns or bool(old.busy) != bool(new.busy):
            self.screen.refresh_bindings()

    def mark(self, name: str) -> None:
        """Record a timing mark once (for ``kbmem bench tui``)."""
        if self.marker is not None and name not in self._marks:
            self._marks.add(name)
            self.marker(name)

    def report_failure(self, error: BaseException, what: str = "") -> None:
        """A failure of ``what`` (a worker group) as a toast; never markup, never a crash."""
        title = FAILURE_TITLES.get(what, "Something failed")
        self.notify(error_text(error), title=title, severity="error", timeout=10, markup=False)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A toast; the same toast twice within a few seconds shows once (one failure can
        reach the UI both as a failed turn and as a failed worker)."""
        if self._toasts.repeated(title, message):
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.report_failure(event.worker.error, event.worker.group)

    # -- start-up ---------------------------------------------------------------------------

    def on_mount(self) -> None:
        stdin = sys.__stdin__
        if not self.is_headless and stdin is not None and stdin.isatty():
            self.shutdown.watch_terminal(stdin.fileno())
        if self.background:
            # After the first paint: heavy imports in threads still compete for the GIL.
            self.call_after_refresh(self.start_background)
            self.set_interval(INDEX_STATUS_S, self.refresh_index_status)
        self.start_remote_sync()

    def start_background(self) -> None:
        self.index_sync.preload_embedder()
        self.sync_index()
        self.open_chat()

    @work(thread=True, exit_on_error=False, group="chat-open", exclusive=True)
    def open_chat(self, new: bool = False, model: str | None = None) -> None:
        session = self.chat.new(model) if new else self.chat.get()
        self.call_from_thread(
            self.set_status,
            engine=session.agent_name,
            model=session.model,
            pending_turns=len(session.pending_turns),
        )
        if new:
            self.call_from_thread(self._chat_restarted, session.chat_id)
            return
        # While the embedding model loads: the first question then only waits for it. The
        # index is built here (with its progress shown) unless the app's own sync does it.
        # A failure here is the first search's to report, not the warm-up's.
        try:
            self.index_sync.bring_to_head(self.quitting)
            session.warm(self.quitting)
        except Cancelled:
            pass  # quitting
        except KbmemError as exc:
            log.info("warming the research tools failed: %s", exc)

    def _chat_restarted(self, chat_id: str) -> None:
        self.notify(f"New chat {chat_id}", markup=False, timeout=3)
        for screen in screens_of(self, ChatScreen):
            screen.reset()

    # -- the index --------------------------------------------------------------------------

    def sync_index(self, full: bool = False) -> None:
        """Bring the tenant's index to HEAD in a worker, unless a sync is already running."""
        self.index_sync.start(full)

    @on(IndexSync.Looked)
    def _index_looked(self, message: IndexSync.Looked) -> None:
        self.set_status(index_commit=message.commit, index_known=True)

    @work(thread=True, exit_on_error=False, group="index-status", exclusive=True)
    def refresh_index_status(self) -> None:
        """Show in the status bar how many of the tenant's commits the index lacks (reads
        only: syncing is the index worker's job, started by a question or a pull)."""
        if self.quitting.is_set():
            return
        try:
            status = self.index_sync.look()
        except KbmemError as exc:  # the next sync says what is wrong, in a toast
            log.info("reading the index's status failed: %s", exc)
            return
        building = "" if status.total is None else f"{status.done or 0:,}/{status.total:,}"
        self.call_from_thread(
            self.set_status,
            index_behind=status.pending_commits if status.built else 0,
            index_building=building,
        )

    @on(IndexSync.Started)
    def _index_sync_started(self, message: IndexSync.Started) -> None:
        self.set_status(syncing=True, sync_progress="")
        self.index_progress = message.progress

    @on(IndexSync.Progressed)
    def _index_sync_progressed(self, message: IndexSync.Progressed) -> None:
        progress = message.progress
        self.set_status(sync_progress=f"{progress.done}/{progress.total}")
        self.index_progress = progress

    @on(IndexSync.Finished)
    def _index_sync_finished(self, message: IndexSync.Finished) -> None:
        self.set_status(
            syncing=False,
            sync_progress="",
            index_commit=message.commit,
            index_behind=0,  # the next look says if HEAD moved on meanwhile
            index_building="",
        )
        self.index_progress = None

    # -- the git remote ---------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="remote-sync", exclusive=True)
    def start_remote_sync(self) -> None:
        """Sync with the git remote in the background while the app runs (commits that
        arrive are indexed as local ones are), its summary in the status bar; nothing at all
        when sync is off or git knows no remote."""
        kb = self.workspace.kb
        if self.quitting.is_set() or not sync_active(kb):
            return
        self.remote_sync = BackgroundSync(
            kb, on_pull=lambda: self.call_from_thread(self.sync_index)
        ).start()
        self.call_from_thread(self.set_interval, SYNC_STATUS_S, self.refresh_remote_status)
        self.call_from_thread(self.refresh_remote_status)

    @work(thread=True, exit_on_error=False, group="remote-status", exclusive=True)
    def refresh_remote_status(self) -> None:
        try:
            summary = sync_status(self.workspace.kb).summary()
        except KbmemError as exc:
            summary = f"sync failed: {exc}"
        self.call_from_thread(self.set_status, remote_sync=summary)

    async def finish_remote_sync(self) -> None:
        """Stop syncing, sending the last commits (a bounded wait; they go next time)."""
        if self.remote_sync is not None:
            syncing, self.remote_sync = self.remote_sync, None
            await asyncio.to_thread(syncing.finish, SYNC_ON_QUIT_S)

    # -- chat-wide events -------------------------------------------------------------------

    def turn_records(self) -> list[Any]:
        """This session's turn records, committed or not (see ChatService.remember)."""
        return self.chat.records()

    def _chat_event_from_thread(self, event: Any) -> None:
        self.post_message(self.ChatEventReceived(event))

    @on(ChatEventReceived)
    def _chat_event(self, message: ChatEventReceived) -> None:
        self.chat_event(message.event)

    def chat_event(self, event: Any) -> None:
        """Status and notifications for events of any turn (called on the UI thread)."""
        show_chat_event(self, event)

    # -- navigation -------------------------------------------------------------------------

    def action_show(self, mode: str) -> None:
        self.show(mode)

    def show(self, mode: str) -> None:
        if self.current_mode != mode:
            self.switch_mode(mode)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def open_page(
        self,
        page_id: str,
        rev: str = "HEAD",
        lines: tuple[int, int] | None = None,
        tenant: str | None = None,
    ) -> None:
        """Switch to History showing ``page_id`` at ``rev`` (cited ``lines`` highlighted)."""
        if isinstance(screen := await self._switched("history"), HistoryScreen):
            screen.show_page(page_id, rev, lines, tenant)

    async def open_audit(self, turn_id: str | None = None) -> None:
        """Switch to Audit, with ``turn_id`` (``<chat-id>/<n>``) selected."""
        if isinstance(screen := await self._switched("audit"), AuditScreen):
            screen.select_turn(turn_id)

    async def _switched(self, mode: str) -> Screen[Any]:
        if self.current_mode != mode:
            await self.switch_mode(mode)
        return self.screen

    # -- commands ---------------------------------------------------------------------------

    def action_new_chat(self) -> None:
        self.new_chat()

    def new_chat(self) -> None:
        self.open_chat(new=True)

    def reindex(self) -> None:
        self.sync_index(full=False)
        self.notify("Syncing the index to the latest commit…", markup=False, timeout=3)

    def commit_now(self) -> None:
        self._commit_now()

    @work(thread=True, exit_on_error=False, group="commit", exclusive=True)
    def _commit_now(self) -> None:
        if self.chat.session is None or not self.chat.session.pending_turns:
            self.call_from_thread(self.notify, "No turns are pending.", markup=False, timeout=3)
            return
        self.call_from_thread(self.set_status, busy="committing…")
        try:
            self.chat.commit_now()
        finally:
            self.call_from_thread(self.set_status, busy="")

    def choose_model(self) -> None:
        choose_engine(self)

    def use_model(self, model: str) -> None:
        """Answer with ``model`` ("": the offline agent) from a new chat; the engine in use
        already keeps the chat going."""
        if model == (self.status.model or ""):  # the status follows the latest choice at once
            what = f"the llm engine with {model}" if model else "the offline engine"
            self.notify(f"Already using {what}; the chat goes on.", markup=False, timeout=3)
            return
        self.set_status(engine="llm" if model else "offline", model=model or None)
        self.open_chat(new=True, model=model)

    # -- shutdown ---------------------------------------------------------------------------

    def running_turns(self) -> list[Worker[Any]]:
        """(any thread) The chat turns still running."""
        return self.shutdown.running_turns()

    async def action_quit(self) -> None:
        await self.shutdown.quit()

    async def on_unmount(self) -> None:
        await self.shutdown.close_chat()
        await self.finish_remote_sync()


def run_app(kb: KnowledgeBase, tenant: str, model: str | None = None) -> None:
    """Open the TUI on ``kb`` for ``tenant``; ``model`` is a litellm model string (None: the
    settings' ``llm.model`` / ``KBMEM_MODEL``, and when that is empty the offline agent)."""
    from . import bench

    out = bench.requested()
    if out is not None:
        bench.run_bench(kb, tenant, model, out)
        return
    KbmemApp(kb, tenant, model).run()
