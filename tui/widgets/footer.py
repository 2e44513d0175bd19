"""The footer of every kbmem screen and dialog. On a wide terminal it is Textual's footer: one
row of keys, the command palette's on the right. Under :data:`NARROW` columns one row cannot
hold a screen's keys and the keys of the other screens (the last ones would be cut off, F2–F4
among them), so the keys go compact into rows of :data:`PER_ROW`, and the command palette's
key is left out (ctrl+p still opens it; the help names it)."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer

NARROW = 100  # columns: under this, a screen is "-narrow" (see KbmemApp.HORIZONTAL_BREAKPOINTS)
PER_ROW = 6  # keys per row of a narrow footer: 13 columns each at 80, "^o Citations" fits
ROWS = 2  # rows of a narrow footer: the Audit screen has 10 keys


class KbmemFooter(Footer):
    """Textual's footer, in rows of keys on a narrow terminal."""

    DEFAULT_CSS = f"""
    KbmemFooter.-rows {{
        layout: grid;
        grid-size: {PER_ROW};
        grid-rows: 1;
        /* Two rows even for a dialog's few keys: they cover the footer of the screen below. */
        height: {ROWS};
        padding-left: 1;
    }}
    """

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < NARROW
        if narrow != self.has_class("-rows"):
            self.set_class(narrow, "-rows")
            self.compact = narrow
            self.show_command_palette = not narrow
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        yield from super().compose()
        # Textual's footer sets as many grid columns as it has keys; the rows need the CSS's.
        self.styles.clear_rule("grid_size_columns")
