"""The Audit screen's Tool calls tab: each call a turn made, its arguments, duration and
hits (each pinned to the commit it was read at), or its error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ..render import at_commit, safe
from .trace import ToolCallView, hit_line

if TYPE_CHECKING:
    from kbmem.agent.records import TurnRecord


class CallList(VerticalScroll):
    """The calls of the turn last given to :meth:`show` (or a note of why there are none)."""

    def show(self, record: TurnRecord, show_times: bool) -> None:
        self.remove_children()
        if not record.tool_calls:
            self.mount(Static(Text("No tool calls.", style="dim")))
            return
        for call in record.tool_calls:
            view = ToolCallView(call.name, call.arguments)
            hits = []
            for iv in call.intervals:
                start, end = int(iv.get("start", 0)), int(iv.get("end", 0))
                hit = hit_line(str(iv.get("page_id")), start, end)
                hit.append(f" {safe(at_commit(str(iv.get('commit') or '')))}", style="dim")
                hits.append(hit)
            view.finish(hits, call.duration_ms if show_times else None, call.error)
            self.mount(view)

    def show_note(self, note: str) -> None:
        """No calls to show: ``note`` says why ("": nothing at all)."""
        self.remove_children()
        if note:
            self.mount(Static(Text(note, style="dim")))
