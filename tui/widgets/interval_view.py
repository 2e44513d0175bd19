"""A cited interval shown in place: a few lines of context, dimmed, around the cited lines,
highlighted, all as the file was at the interval's commit."""

from __future__ import annotations

from rich.table import Table
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ..render import numbered, split_lines


class NumberedLines(Vertical):
    """A file's lines with numbers; the lines ``start..end`` highlighted (class ``-cited``).
    ``file_text`` may be a part of a file whose first line is line ``first``."""

    DEFAULT_CSS = """
    NumberedLines { height: auto; }
    NumberedLines > Static { height: auto; }
    NumberedLines > .-context { color: $text-muted; }
    NumberedLines > .-cited { background: $warning 25%; text-style: bold; }
    """

    def __init__(
        self,
        file_text: str,
        start: int = 0,
        end: int = 0,
        context: int | None = None,
        reveal: bool = False,
        first: int = 1,
        **kwargs: object,
    ):
        """``reveal``: scroll the cited lines to the top of the view once they have a layout
        (on a tab that is only just being shown, that is later than the mount)."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.lines = split_lines(file_text)
        self.start = start
        self.end = end
        self.context = context
        self.reveal = reveal
        self.first = first

    def parts(self) -> list[tuple[str, Table]]:
        """``(class, text)`` blocks: before, cited, after (only non-empty ones)."""
        first, last = self.first, self.first + len(self.lines) - 1
        width = len(str(max(last, 1)))
        if not self.start:
            return [("-plain", numbered(self.lines, first, width))] if self.lines else []
        start, end = max(first, self.start), min(last, self.end)
        lo, hi = first, last
        if self.context is not None:
            lo, hi = max(first, start - self.context), min(last, end + self.context)
        blocks = [
            ("-context", lo, start - 1),
            ("-cited", start, end),
            ("-context", end + 1, hi),
        ]
        return [
            (cls, numbered(self.lines[a - first : b - first + 1], a, width))
            for cls, a, b in blocks
            if a <= b
        ]

    def compose(self) -> ComposeResult:
        for cls, text in self.parts():
            yield Static(text, classes=cls)

    def cited(self) -> Static | None:
        """The highlighted block, if any (to scroll to it)."""
        found = self.query(".-cited")
        return found.first(Static) if found else None

    def on_resize(self, event: events.Resize) -> None:
        if self.reveal and event.size.height:
            self.reveal = False
            cited = self.cited()
            if cited is not None:
                self.call_after_refresh(cited.scroll_visible, top=True, animate=False)
