"""A scrolling log that stays pinned to its end while content grows (``anchor()``), but only
once it overflows: an anchored container shorter than its viewport would sit at the bottom."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widget import Widget


class FollowScroll(VerticalScroll):
    """Call :meth:`follow` after adding or resizing content; ``following = False`` stops it
    (to let the reader start at the top of something)."""

    following = True

    def follow(self) -> None:
        if self.following:
            self.call_after_refresh(self._follow)

    def _follow(self) -> None:
        if not self.following:
            return
        overflowing = self.max_scroll_y > 0
        if overflowing and not self.is_anchored:
            self.anchor()
        elif not overflowing and self.is_anchored:
            self.anchor(False)

    def on_resize(self) -> None:
        self.follow()

    def watch_virtual_size(self) -> None:
        # The content grew (or shrank) after its last follow(): a Markdown laid out late.
        self.follow()

    def append(self, *widgets: Widget) -> None:
        self.mount(*widgets)
        self.follow()
