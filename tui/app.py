"""The kbmem terminal app: three screens (Chat, History, Audit) as modes, a status bar, the
command palette, help; slow work (embedding model, index, chat, git) in workers.

``kbmem chat`` calls :func:`run_app`."""

from __future__ import annotations

import asyncio
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from typing import Any, ClassVar

from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.worker import Worker, WorkerState

from kbmem.store.repository import KnowledgeBase

from .chat_service import ChatService
from .commands import KbmemCommands
from .render import error_text, short_sha
from .screens.audit import AuditScreen
from .screens.chat import ChatScreen
from .screens.help import HelpScreen
from .screens.history import HistoryScreen
from .screens.prompt import ChoiceScreen, PromptScreen
from .widgets.footer import NARROW
from .widgets.status_bar import Status
from .workspace import Workspace

log = logging.getLogger(__name__)

Marker = Callable[[str], None]
# Sent SIGHUP by hand, the app quits as ctrl+q does; should that not end it in this time, it
# ends at once (its turns are journaled: the next start commits them).
HANGUP_GRACE_S = 60.0
EXIT_HUNG_UP = 129  # 128 + SIGHUP, as a shell reports a process that a hang-up ended
HANGUP_POLL_MS = 500  # how often the terminal's watcher also looks for a SIGHUP
TURN_STOP_S = 30.0  # how long quitting waits for a running turn to stop


def terminal_gone(fd: int, timeout_ms: int = 0) -> bool:
    """Whether the terminal on ``fd`` has hung up (its window closed, its ssh connection
    dropped), waiting up to ``timeout_ms`` for it: a poll reports the hang-up, or the
    descriptor is no longer open. Input waiting to be read is no hang-up."""
    poller = select.poll()
    poller.register(fd, select.POLLHUP)  # errors and an invalid fd are reported as well
    return any(
        mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
        for _fd, mask in poller.poll(timeout_ms)
    )


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
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (NARROW, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help"),
        Binding("f2", "show('chat')", "Chat"),
        Binding("f3", "show('history')", "History"),
        Binding("f4", "show('audit')", "Audit"),
        Binding("ctrl+n", "new_chat", "New chat", show=False),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    ]

    status: var[Status] = var(Status)

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
        first turn). ``marker`` receives timing marks for ``kbmem bench tui``
        ("first_paint", "embedder_ready", "index_ready", "answer")."""
        super().__init__()
        self.workspace = Workspace(kb, tenant, model, kb_label)
        self.cursor_blink = cursor_blink
        self.show_times = show_times
        self.suggestions = suggestions
        self.marker = marker
        self.background = background
        self.chat = ChatService(self.workspace, self._chat_event_from_thread, chat_id)
        self._records: dict[str, Any] = {}
        self._marks: set[str] = set()
        self._last_toast: tuple[tuple[str, str], float] = (("", ""), 0.0)
        # Set when quitting: no new index sync starts, and a running one (the app's own or the
        # chat's warm-up) stops after its current step or while it waits for the other (its
        # partial build is discarded; the live index is untouched).
        self._quitting = threading.Event()
        self.set_reactive(
            KbmemApp.status,
            Status(
                kb=self.workspace.kb_label,
                tenant=tenant,
                engine=self.workspace.engine,
                model=self.workspace.model,
                batch_turns=self.workspace.batch_turns,
                embedder="loading" if background else "not loaded",
            ),
        )

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
        """A failure as a toast; never markup, never a crash."""
        title = {
            "chat-send": "The turn failed",
            "chat-open": "The chat could not open",
            "index": "Indexing failed",
            "embedder": "The embedding model failed to load",
        }.get(what, "Something failed")
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
        now = time.monotonic()
        key = (title, message)
        if key == self._last_toast[0] and now - self._last_toast[1] < 3:
            return
        self._last_toast = (key, now)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.report_failure(event.worker.error, event.worker.group)

    # -- start-up ---------------------------------------------------------------------------

    def on_mount(self) -> None:
        stdin = sys.__stdin__
        if not self.is_headless and stdin is not None and stdin.isatty():
            self._watch_terminal(stdin.fileno())
        if self.background:
            # After the first paint: heavy imports in threads still compete for the GIL.
            self.call_after_refresh(self.start_background)

    def start_background(self) -> None:
        self.preload_embedder()
        self.sync_index()
        self.open_chat()

    @work(thread=True, exit_on_error=False, group="embedder")
    def preload_embedder(self) -> None:
        from kbmem.index import embedder

        try:
            embedder.preload()
        except BaseException:
            self.call_from_thread(self.set_status, embedder="failed")
            raise
        self.call_from_thread(self.set_status, embedder="ready")
        self.mark("embedder_ready")

    def sync_index(self, full: bool = False) -> None:
        """Bring the tenant's index to HEAD in a worker, unless a sync is already running."""
        if self._quitting.is_set():
            return  # the next start syncs; quitting must not wait for an index build
        if not any(w.group == "index" and not w.is_finished for w in self.workers):
            self._sync_index(full)

    @work(thread=True, exit_on_error=False, group="index")
    def _sync_index(self, full: bool = False) -> None:
        """Bring the tenant's index to HEAD, showing "syncing" while it runs."""
        from kbmem.errors import Cancelled, KbmemError
        from kbmem.index.tenant import TenantIndex

        kb = self.workspace.kb
        index = TenantIndex(kb, self.workspace.tenant)
        try:
            gen = index.current()
        except KbmemError:
            gen = None
        current = gen.commit if gen is not None else None
        self.call_from_thread(self.set_status, index_commit=current, index_known=True)
        if current is not None and current == kb.head() and not full:
            self.mark("index_ready")
            return
        self.call_from_thread(self.set_status, syncing=True, sync_progress="")
        shown = [-1]

        def progress(done: int, total: int) -> None:
            percent = 100 * done // max(total, 1)
            if percent >= shown[0] + 5 or done == total:  # a few updates, not thousands
                shown[0] = percent
                self.call_from_thread(self.set_status, sync_progress=f"{done}/{total}")

        try:
            report = index.sync(full=full, progress=progress, cancel=self._quitting)
        except Cancelled:
            return
        finally:
            self.call_from_thread(self.set_status, syncing=False, sync_progress="")
        gen = index.current()
        self.call_from_thread(self.set_status, index_commit=gen.commit if gen else None)
        self.mark("index_ready")
        if full or report.mode == "full":
            self.call_from_thread(
                self.notify,
                f"Index rebuilt at {short_sha(report.commit)}: {report.intervals_added} "
                f"intervals in {report.seconds:.1f} s",
                markup=False,
            )

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
        else:
            # While the embedding model loads: the first question then only waits for it.
            # A failure here is the first search's to report, not the warm-up's.
            from kbmem.errors import Cancelled, KbmemError

            try:
                session.warm(self._quitting)
            except Cancelled:
                pass  # quitting
            except KbmemError as exc:
                log.info("warming the research tools failed: %s", exc)

    def _chat_restarted(self, chat_id: str) -> None:
        self.notify(f"New chat {chat_id}", markup=False, timeout=3)
        for screen in self._screens_of(ChatScreen):
            screen.reset()

    # -- chat-wide events -------------------------------------------------------------------

    def remember_turn(self, record: Any) -> None:
        """Keep this session's turn records: the Audit screen shows them before they are
        committed."""
        self._records[record.turn_id] = record

    def turn_records(self) -> list[Any]:
        return list(self._records.values())

    def _chat_event_from_thread(self, event: Any) -> None:
        self.post_message(self.ChatEventReceived(event))

    @on(ChatEventReceived)
    def _chat_event(self, message: ChatEventReceived) -> None:
        self.chat_event(message.event)

    def chat_event(self, event: Any) -> None:
        """Status and notifications for events of any turn (called on the UI thread)."""
        kind = event.kind
        if kind == "turn_finished":
            self.set_status(pending_turns=event.pending_turns)
            self.mark("answer")
            self.sync_index()  # the turn's research synced the index; show where it is
        elif kind == "batch_committed":
            self.set_status(pending_turns=0)
            what = "recovered turns" if event.recovered else "turns"
            self.notify(
                f"Committed {what} {event.first}–{event.last} of chat {event.chat_id} "
                f"as {short_sha(event.commit)}",
                markup=False,
                timeout=4,
            )
            self.sync_index()
            for screen in self._screens_of(AuditScreen):
                screen.load_turns()
        elif kind == "notice":
            severity = {"warning": "warning", "error": "error"}.get(event.level, "information")
            self.notify(event.message, severity=severity, markup=False)  # type: ignore[arg-type]

    def _screens_of(self, kind: type) -> list[Any]:
        return [
            screen
            for stack in self._screen_stacks.values()
            for screen in stack
            if isinstance(screen, kind)
        ]

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
        if self.current_mode != "history":
            await self.switch_mode("history")
        screen = self.screen
        if isinstance(screen, HistoryScreen):
            screen.show_page(page_id, rev, lines, tenant)

    async def open_audit(self, turn_id: str | None = None) -> None:
        """Switch to Audit, with ``turn_id`` (``<chat-id>/<n>``) selected."""
        if self.current_mode != "audit":
            await self.switch_mode("audit")
        screen = self.screen
        if isinstance(screen, AuditScreen):
            screen.select_turn(turn_id)

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
        configured = self.workspace.kb.settings.model
        current = self.status.model or ""  # the latest choice, even before its chat opens
        choices = [("", "offline — the offline agent, no network")]
        for model in dict.fromkeys(m for m in (configured, current) if m):
            choices.append((model, f"{model} — litellm"))
        choices.append(("?", "another litellm model…"))

        def chosen(value: str | None) -> None:
            if value == "?":
                self.push_screen(
                    PromptScreen(
                        "litellm model (e.g. ollama/llama3, openai/gpt-4o-mini):",
                        value=current,
                        placeholder="provider/model",
                    ),
                    lambda typed: (
                        self._use_model(typed.strip()) if typed and typed.strip() else None
                    ),
                )
            elif value is not None:
                self._use_model(value)

        self.push_screen(ChoiceScreen("Which engine should answer?", choices, current), chosen)

    def _use_model(self, model: str) -> None:
        """Answer with ``model`` ("": the offline agent) from a new chat; the engine in use
        already keeps the chat going."""
        if model == (self.status.model or ""):  # the status follows the latest choice at once
            what = f"the llm engine with {model}" if model else "the offline engine"
            self.notify(f"Already using {what}; the chat goes on.", markup=False, timeout=3)
            return
        self.set_status(engine="llm" if model else "offline", model=model or None)
        self.open_chat(new=True, model=model)

    # -- shutdown ---------------------------------------------------------------------------

    def _watch_terminal(self, fd: int) -> None:
        """Commit the chat and end, once the terminal on ``fd`` hangs up; quit as ctrl+q does
        on a SIGHUP sent by hand.

        Left alone, a hung-up app kept one core at 100% for good, its turns uncommitted
        (Textual's input thread reads the end of input over and over), wherever no SIGHUP
        reached it; where one did, it was killed, its turns uncommitted. A thread waits for
        the hang-up (a poll, no CPU to speak of); SIGHUP only tells that thread."""
        sighup = threading.Event()

        def watch() -> None:
            while not terminal_gone(fd, HANGUP_POLL_MS):
                if sighup.is_set() and not terminal_gone(fd, HANGUP_POLL_MS):
                    # Sent by hand: the terminal is there, and is given back as ctrl+q does.
                    log.warning("SIGHUP: committing the chat and quitting")
                    timer = threading.Timer(HANGUP_GRACE_S, os._exit, (EXIT_HUNG_UP,))
                    timer.daemon = True
                    timer.start()
                    self.call_later(self.action_quit)  # thread-safe: it posts a message
                    return
            self._terminal_hung_up()

        threading.Thread(target=watch, name="kbmem-terminal", daemon=True).start()
        signal.signal(signal.SIGHUP, lambda _signum, _frame: sighup.set())

    def _terminal_hung_up(self) -> None:
        """(the watching thread) The terminal is gone: stop a running turn, commit the chat
        and end the process from here. Not through Textual's shutdown: a write to the hung-up
        terminal can have killed Textual's writer thread already, and the app's next writes
        then wait on its full queue for good (its event loop with them)."""
        log.warning("the terminal hung up: committing the chat and ending")
        devnull = os.open(os.devnull, os.O_RDWR)  # what is still written goes nowhere
        for std in (0, 1, 2):
            os.dup2(devnull, std)
        os.close(devnull)
        self._quitting.set()
        self.chat.cancel()
        deadline = time.monotonic() + TURN_STOP_S
        while self._running_turns() and time.monotonic() < deadline:
            time.sleep(0.05)
        code = 0
        try:
            self.chat.close()
        except Exception:  # the turns stay journaled; the next start commits them
            log.exception("the chat could not be committed")
            code = 1
        os._exit(code)

    def _running_turns(self) -> list[Worker[Any]]:
        """(any thread) The chat turns still running."""
        while True:
            try:
                workers = list(self.workers)
            except RuntimeError:  # they changed while they were read (another thread)
                continue
            return [w for w in workers if w.group == "chat-send" and not w.is_finished]

    async def action_quit(self) -> None:
        self._quitting.set()
        if self._running_turns():
            self.set_status(busy="stopping the turn, then committing…")
            self.notify(
                "Stopping the running turn (it is kept, marked interrupted), then committing.",
                markup=False,
            )
        elif self.chat.session is not None and self.chat.session.pending_turns:
            self.set_status(busy="committing…")
            self.notify("Committing pending turns…", markup=False, timeout=2)
        await self._close_chat()
        self.exit()

    async def _close_chat(self) -> None:
        """Stop a running turn (it is journaled as interrupted), then commit what is pending."""
        self.chat.cancel()
        for worker in self._running_turns():
            with suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=TURN_STOP_S)
        try:
            await asyncio.to_thread(self.chat.close)
        except Exception as exc:  # the turns stay journaled; the next start commits them
            self.report_failure(exc, "commit")

    async def on_unmount(self) -> None:
        self._quitting.set()
        await self._close_chat()


def run_app(kb: KnowledgeBase, tenant: str, model: str | None = None) -> None:
    """Open the TUI on ``kb`` for ``tenant``; ``model`` is a litellm model string (None: the
    settings' ``llm.model`` / ``KBMEM_MODEL``, and when that is empty the offline agent)."""
    from . import bench

    out = bench.requested()
    if out is not None:
        bench.run_bench(kb, tenant, model, out)
        return
    KbmemApp(kb, tenant, model).run()
