"""The status bar: knowledge base, tenant, engine and model, the commit the index reflects
(and whether it is syncing), the embedding model, and turns pending until the batch commit."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static


@dataclass(frozen=True)
class Status:
    """Everything the status bar shows; the app replaces it as a whole (one reactive)."""

    kb: str = ""
    tenant: str = ""
    engine: str = "offline"
    model: str | None = None
    index_commit: str | None = None
    index_known: bool = False  # False until the index has been looked at
    syncing: bool = False
    sync_progress: str = ""  # "120/253" intervals, while syncing
    embedder: str = "loading"  # loading | ready | failed
    pending_turns: int = 0
    batch_turns: int = 5
    busy: str = ""  # what a long-running job is doing, e.g. "researching…"


def status_text(status: Status, width: int = 0) -> Text:
    """The status line; when it is wider than ``width`` (0: any width), without its labels
    ("KB", "tenant", "turns") and without "embedder ready", and cut with "…" if still too wide."""
    text = _status_text(status, short=False)
    if width and text.cell_len > width:
        text = _status_text(status, short=True)
        text.truncate(width, overflow="ellipsis")
    return text


def _status_text(status: Status, short: bool) -> Text:
    sep = (" │ ", "dim")
    engine = status.engine if not status.model else f"{status.engine} · {status.model}"
    if status.syncing:
        done = f" {status.sync_progress}" if status.sync_progress else "…"
        index = (f"index syncing{done}", "bold yellow")
    elif status.index_commit:
        index = (f"index @{status.index_commit[:7]}", "")
    elif status.index_known:
        index = ("index not built", "yellow")
    else:
        index = ("index …", "dim")
    embedder = {
        "loading": ("embedder loading…", "yellow"),
        "ready": ("embedder ready", "green"),
        "failed": ("embedder failed", "bold red"),
    }.get(status.embedder, (f"embedder {status.embedder}", "dim"))
    pending = f"pending {status.pending_turns}/{status.batch_turns}"
    parts: list[tuple[str, str]] = [
        *([] if short else [("KB ", "dim")]),
        (status.kb, "bold"),
        sep,
        *([] if short else [("tenant ", "dim")]),
        (status.tenant, "bold"),
        sep,
        (engine, ""),
        sep,
        index,
        *([] if short and status.embedder == "ready" else [sep, embedder]),
        sep,
        (pending if short else f"turns {pending}", ""),
    ]
    if status.busy:
        parts += [sep, (status.busy, "bold magenta")]
    return Text.assemble(*parts, end="")


class StatusBar(Static):
    """One line at the top of every screen, following ``App.status``."""

    DEFAULT_CSS = """
    StatusBar {
        dock: top;
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text;
    }
    """

    shown = Status()

    def on_mount(self) -> None:
        self.watch(self.app, "status", self._show)

    def on_resize(self) -> None:
        self._show(self.shown)  # labels come back, or go, with the width

    def _show(self, status: Status) -> None:
        self.shown = status
        self.update(status_text(status, self.content_size.width))
