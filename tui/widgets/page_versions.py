"""The History screen's tables: a page's front matter (values wrapped to the pane's width)
and its versions from git, newest first, with the one shown and the diff base marked."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from kbmem.store.repository import CommitInfo

from ..history_data import Shown
from ..render import plain, short_date, short_sha, value_text

SHOWN, MARKED = "▶", "◆"  # the version on screen; the diff base


class FrontMatter(DataTable[Text]):
    """A version's front matter as ``field | value`` rows; a header that cannot be read is a
    first row, "problem", in red. Hidden when there is nothing to show."""

    def show(self, shown: Shown, pane_width: int) -> None:
        rows = [(key, value_text(value)) for key, value in shown.meta.items()]
        if shown.problem:
            rows.insert(0, ("problem", shown.problem))
        self.display = bool(rows)
        if not rows:
            return
        key_width = max(len(key) for key, _ in rows)
        # Cell padding (1 each side, two columns), the scroll bars, a margin.
        value_width = max(20, pane_width - key_width - 4 - 5)
        self.clear(columns=True)
        self.add_column("field", width=key_width)
        self.add_column("value", width=value_width)
        for key, value in rows:
            style = "bold red" if key == "problem" and shown.problem else "bold"
            self.add_row(plain(key, style), plain(value), height=None)


class VersionTable(DataTable[Text]):
    """A page's versions, newest first: home and end go to the newest and the oldest (a
    table's own home and end scroll sideways, which a list of 500 versions has no use for)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "scroll_top", "Newest", show=False),
        Binding("end", "scroll_bottom", "Oldest", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.versions: list[CommitInfo] = []

    def on_mount(self) -> None:
        self.add_columns(" ", "commit", "date", "author", "message")

    def fill(self, versions: list[CommitInfo], shown: str | None, marked: str | None) -> None:
        """List ``versions``, the cursor on the one ``shown``, the diff base ``marked``."""
        self.versions = versions
        self.clear()
        cursor = 0
        for n, c in enumerate(versions):
            mark = MARKED if c.sha == marked else (SHOWN if c.sha == shown else "")
            if c.sha == shown:
                cursor = n
            self.add_row(
                plain(mark, "bold"),
                plain(short_sha(c.sha)),
                plain(short_date(c.date)),
                plain(c.author),
                plain(c.message.splitlines()[0] if c.message else ""),
                key=c.sha,
            )
        if versions:
            self.move_cursor(row=cursor, animate=False)

    def cursor_sha(self) -> str | None:
        """The version under the cursor."""
        if not 0 <= self.cursor_row < len(self.versions):
            return None
        return self.versions[self.cursor_row].sha

    def version(self, sha: str | None) -> CommitInfo | None:
        return next((c for c in self.versions if c.sha == sha), None)
