"""What events of the chat as a whole do to the app: a finished turn, a batch commit (of this
chat, or of turns recovered from a crashed run), a notice; and the toasts of failures."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TypeVar

from textual.app import App
from textual.notifications import SeverityLevel
from textual.screen import Screen

from .render import short_sha
from .screens.audit import AuditScreen

if TYPE_CHECKING:
    from .app import KbmemApp

# A failed worker's toast, by the worker's group.
FAILURE_TITLES = {
    "chat-send": "The turn failed",
    "chat-open": "The chat could not open",
    "index": "Indexing failed",
    "embedder": "The embedding model failed to load",
}
REPEAT_S = 3.0  # the same toast again within this time shows once
SEVERITIES: dict[str, SeverityLevel] = {"warning": "warning", "error": "error"}

ScreenT = TypeVar("ScreenT", bound=Screen[Any])


def screens_of(app: App[Any], kind: type[ScreenT]) -> list[ScreenT]:
    """The app's screens of ``kind``, in every mode (a mode's screen lives on while another
    mode is shown)."""
    return [
        screen
        for stack in app._screen_stacks.values()  # no public API lists every mode's screens
        for screen in stack
        if isinstance(screen, kind)
    ]


class RepeatFilter:
    """Tells a toast that repeats the one before within :data:`REPEAT_S` seconds."""

    def __init__(self) -> None:
        self.last: tuple[str, str] = ("", "")
        self.at = 0.0

    def repeated(self, title: str, message: str) -> bool:
        now = time.monotonic()
        if (title, message) == self.last and now - self.at < REPEAT_S:
            return True
        self.last, self.at = (title, message), now
        return False


def show_chat_event(app: KbmemApp, event: Any) -> None:
    """The status and toasts for a chat-wide ``event`` (on the UI thread). Dispatched on
    ``kind``: importing kbmem.agent here would load the researcher before the first paint."""
    kind = event.kind
    if kind == "turn_finished":
        app.set_status(pending_turns=event.pending_turns)
        app.mark("answer")
        app.sync_index()  # the turn's research synced the index; show where it is
    elif kind == "batch_committed":
        app.set_status(pending_turns=0)
        what = "recovered turns" if event.recovered else "turns"
        app.notify(
            f"Committed {what} {event.first}–{event.last} of chat {event.chat_id} "
            f"as {short_sha(event.commit)}",
            markup=False,
            timeout=4,
        )
        app.sync_index()
        for screen in screens_of(app, AuditScreen):
            screen.load_turns()
    elif kind == "notice":
        severity = SEVERITIES.get(event.level, "information")
        app.notify(event.message, severity=severity, markup=False)
