"""The status bar: knowledge base, tenant, engine and model, the commit the index reflects
(whether it is syncing, or how many commits it is behind HEAD), the embedding model, turns
pending until the batch commit, and, when the memory syncs with a git remote, that sync's
summary (nothing otherwise)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from ..workspace import Workspace


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
    # The tenant's commits the index does not hold yet (another process wrote since the last
    # sync), and how far a build elsewhere has got ("1,200/20,000"; "" when none runs).
    index_behind: int = 0
    index_building: str = ""
    embedder: str = "loading"  # loading | ready | failed
    pending_turns: int = 0
    batch_turns: int = 5
    busy: str = ""  # what a long-running job is doing, e.g. "researching…"
    # The git remote's sync, "sync ↑0 ↓2 · 12 s ago" ("": no remote, nothing shown).
    remote_sync: str = ""

    @classmethod
    def of(cls, workspace: Workspace, embedder: str) -> Status:
        """The status of an app just opened on ``workspace``."""
        return cls(
            kb=workspace.kb_label,
            tenant=workspace.tenant,
            engine=workspace.engine,
            model=workspace.model,
            batch_turns=workspace.batch_turns,
            embedder=embedder,
        )


# How a status line too wide for its bar shortens: one level at a time, each shortening or
# dropping one more part, the least important first; what a turn or a quit is doing and the
# turns not yet committed stay to the end.
LABELS = 1  # "KB", "tenant", "turns" and "embedder ready" go (the usual narrow line)
LOADING = 2  # "embedder loading…" goes: the first question waits for the model anyway
PROVIDER = 3  # the model without its provider: "gpt-4o-mini" for "openai/gpt-4o-mini"
KB = 4  # the knowledge base's name goes: the person who opened it knows it
ENGINE = 5  # the model alone, which says the llm engine
INDEX = 6  # the index only while syncing, behind or not built: "syncing 120/253", "3 behind"
TENANT = 7  # the tenant goes
MODEL = 8  # the engine and its model go, and the remote sync's summary
FAILED = 9  # "embedder failed" goes (a toast said so)
SYNCING = 10  # the index goes altogether
LEVELS = SYNCING


def status_text(status: Status, width: int = 0) -> Text:
    """The status line in ``width`` cells (0: any width). A line too wide loses its least
    important parts first, level by level (:data:`LABELS` to :data:`SYNCING`), whole; only a
    line still too wide without them is cut, at a word boundary, with "…"."""
    for level in range(LEVELS + 1):
        text = _status_text(status, level)
        if not width or text.cell_len <= width:
            return text
    return _cut(text, width)


def _cut(text: Text, width: int) -> Text:
    """``text`` cut to ``width`` cells after its last whole word that fits, with "…" (a word
    wider than the bar is cut in it)."""
    plain = text.plain
    for end in reversed([n for n, char in enumerate(plain) if char == " "]):
        head = text[: len(plain[:end].rstrip(" │"))]
        if head and head.cell_len < width:
            head.append("…")
            return head
    text.truncate(width, overflow="ellipsis")
    return text


def _status_text(status: Status, level: int) -> Text:
    """The status line at ``level`` of shortening; each part is its segments (a dim label, a
    value), or none when it goes."""
    labelled = level < LABELS
    model = status.model or ""
    if level >= PROVIDER:
        model = model.rpartition("/")[2] or model
    if not model:
        engine = status.engine
    else:
        engine = model if level >= ENGINE else f"{status.engine} · {model}"
    if level >= SYNCING:
        index = ("", "")
    elif status.syncing:
        done = f" {status.sync_progress}" if status.sync_progress else "…"
        index = (f"{'syncing' if level >= INDEX else 'index syncing'}{done}", "bold yellow")
    elif status.index_commit and status.index_behind:
        # Never silent: an answer may miss the newest memory until the next sync.
        building = f" · {status.index_building}" if status.index_building else ""
        behind = f"{status.index_behind} behind{building}"
        index = (behind if level >= INDEX else f"index {behind}", "bold yellow")
    elif status.index_commit:
        index = ("" if level >= INDEX else f"index @{status.index_commit[:7]}", "")
    elif status.index_known:
        index = ("index not built", "yellow")
    else:
        index = ("" if level >= INDEX else "index …", "dim")
    embedder = {
        "loading": ("" if level >= LOADING else "embedder loading…", "yellow"),
        "ready": ("embedder ready" if labelled else "", "green"),
        "failed": ("" if level >= FAILED else "embedder failed", "bold red"),
    }.get(status.embedder, ("" if level >= LOADING else f"embedder {status.embedder}", "dim"))
    remote: list[tuple[str, str]] = []
    if status.remote_sync and level < MODEL:
        troubled = any(w in status.remote_sync for w in ("offline", "failed", "conflict"))
        remote = [(status.remote_sync, "yellow" if troubled else "")]
    pending = f"pending {status.pending_turns}/{status.batch_turns}"
    kb = [("KB ", "dim"), (status.kb, "bold")] if labelled else [(status.kb, "bold")]
    tenant = (
        [("tenant ", "dim"), (status.tenant, "bold")] if labelled else [(status.tenant, "bold")]
    )
    parts: list[list[tuple[str, str]]] = [
        [] if level >= KB else kb,
        [] if level >= TENANT else tenant,
        [] if level >= MODEL else [(engine, "")],
        [index] if index[0] else [],
        [embedder] if embedder[0] else [],
        remote,
        [(f"turns {pending}" if labelled else pending, "")],
        [(status.busy, "bold magenta")] if status.busy else [],
    ]
    text = Text(end="")
    for segments in filter(None, parts):
        if text:
            text.append(" │ ", "dim")
        for segment, style in segments:
            text.append(segment, style)
    return text


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
