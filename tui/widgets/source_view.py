"""The History screen's Source tab: a version of a file with line numbers, the cited lines
highlighted and scrolled to; of a huge file, a window of its lines around them."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Static

from ..history_data import Shown, size_text, window
from .interval_view import NumberedLines


class SourceView(VerticalScroll):
    """The file as committed (front matter and all), as :meth:`show` was last given it."""

    async def show(self, shown: Shown, lines: tuple[int, int] | None, print_it: str) -> None:
        """Show ``shown``'s text, ``lines`` highlighted; ``print_it`` tells how to print a
        file that is shown only in part."""
        await self.remove_children()
        start, end = lines or (0, 0)
        part = window(shown.text, start)
        if not part.whole:
            await self.mount(
                Static(
                    f"Lines {part.first:,}–{part.last:,} of {part.total:,} are shown: this "
                    f"version is {size_text(len(shown.text))}. {print_it}",
                    classes="cut-note",
                    markup=False,
                )
            )
        numbered = NumberedLines(part.text, start, end, reveal=bool(lines), first=part.first)
        await self.mount(numbered)
