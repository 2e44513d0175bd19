"""Ending well: quitting stops a running turn (journaled as interrupted) and commits what is
pending; a hung-up terminal (its window closed, its ssh connection dropped) does the same and
ends the process; a SIGHUP sent by hand quits as ctrl+q does.

Left alone, a hung-up app kept one core at 100% for good, its turns uncommitted (Textual's
input thread reads the end of input over and over), wherever no SIGHUP reached it; where one
did, it was killed, its turns uncommitted. A thread waits for the hang-up (a poll, no CPU to
speak of); SIGHUP only tells that thread."""

from __future__ import annotations

import asyncio
import logging
import os
import select
import signal
import threading
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from textual.worker import Worker

if TYPE_CHECKING:
    from .app import KbmemApp

log = logging.getLogger(__name__)

# Sent SIGHUP by hand, the app quits as ctrl+q does; should that not end it in this time, it
# ends at once (its turns are journaled: the next start commits them).
HANGUP_GRACE_S = 60.0
EXIT_HUNG_UP = 129  # 128 + SIGHUP, as a shell reports a process that a hang-up ended
HANGUP_POLL_MS = 500  # how often the terminal's watcher also looks for a SIGHUP
TURN_STOP_S = 30.0  # how long quitting waits for a running turn to stop


def terminal_gone(fd: int, timeout_ms: int = 0) -> bool:
    """Whether the terminal on ``fd`` has hung up, waiting up to ``timeout_ms`` for it: a
    poll reports the hang-up, or the descriptor is no longer open. Input waiting to be read
    is no hang-up."""
    poller = select.poll()
    poller.register(fd, select.POLLHUP)  # errors and an invalid fd are reported as well
    return any(
        mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
        for _fd, mask in poller.poll(timeout_ms)
    )


class Shutdown:
    """How ``app`` ends: by ctrl+q (:meth:`quit`), when Textual unmounts it, or when its
    terminal hangs up (:meth:`watch_terminal`)."""

    def __init__(self, app: KbmemApp) -> None:
        self.app = app

    def running_turns(self) -> list[Worker[Any]]:
        """(any thread) The chat turns still running."""
        while True:
            try:
                workers = list(self.app.workers)
            except RuntimeError:  # they changed while they were read (another thread)
                continue
            return [w for w in workers if w.group == "chat-send" and not w.is_finished]

    async def quit(self) -> None:
        """Say what quitting waits for, stop and commit (:meth:`close_chat`), then exit."""
        app = self.app
        app.quitting.set()
        if self.running_turns():
            app.set_status(busy="stopping the turn, then committing…")
            app.notify(
                "Stopping the running turn (it is kept, marked interrupted), then committing.",
                markup=False,
            )
        elif app.chat.session is not None and app.chat.session.pending_turns:
            app.set_status(busy="committing…")
            app.notify("Committing pending turns…", markup=False, timeout=2)
        await self.close_chat()
        app.exit()

    async def close_chat(self) -> None:
        """Stop a running turn (it is journaled as interrupted), then commit what is pending."""
        app = self.app
        app.quitting.set()
        app.chat.cancel()
        for worker in self.running_turns():
            with suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=TURN_STOP_S)
        try:
            await asyncio.to_thread(app.chat.close)
        except Exception as exc:  # the turns stay journaled; the next start commits them
            app.report_failure(exc, "commit")

    def watch_terminal(self, fd: int) -> None:
        """Commit the chat and end once the terminal on ``fd`` hangs up (see the module)."""
        HangUpWatcher(self).start(fd)


class HangUpWatcher:
    """Watches the app's terminal from a thread of its own (see the module's doc)."""

    def __init__(self, shutdown: Shutdown) -> None:
        self.shutdown = shutdown
        self.app = shutdown.app
        self.sighup = threading.Event()

    def start(self, fd: int) -> None:
        """Watch the terminal on ``fd``, and take over SIGHUP."""
        threading.Thread(target=self._watch, args=(fd,), name="kbmem-terminal", daemon=True).start()
        signal.signal(signal.SIGHUP, lambda _signum, _frame: self.sighup.set())

    def _watch(self, fd: int) -> None:
        while not terminal_gone(fd, HANGUP_POLL_MS):
            if self.sighup.is_set() and not terminal_gone(fd, HANGUP_POLL_MS):
                # Sent by hand: the terminal is there, and is given back as ctrl+q does.
                log.warning("SIGHUP: committing the chat and quitting")
                timer = threading.Timer(HANGUP_GRACE_S, os._exit, (EXIT_HUNG_UP,))
                timer.daemon = True
                timer.start()
                self.app.call_later(self.app.action_quit)  # thread-safe: it posts a message
                return
        self._hung_up()

    def _hung_up(self) -> None:
        """The terminal is gone: stop a running turn, commit the chat and end the process
        from here. Not through Textual's shutdown: a write to the hung-up terminal can have
        killed Textual's writer thread already, and the app's next writes then wait on its
        full queue for good (its event loop with them)."""
        log.warning("the terminal hung up: committing the chat and ending")
        devnull = os.open(os.devnull, os.O_RDWR)  # what is still written goes nowhere
        for std in (0, 1, 2):
            os.dup2(devnull, std)
        os.close(devnull)
        app = self.app
        app.quitting.set()
        app.chat.cancel()
        deadline = time.monotonic() + TURN_STOP_S
        while self.shutdown.running_turns() and time.monotonic() < deadline:
            time.sleep(0.05)
        code = 0
        try:
            app.chat.close()
        except Exception:  # the turns stay journaled; the next start commits them
            log.exception("the chat could not be committed")
            code = 1
        os._exit(code)
