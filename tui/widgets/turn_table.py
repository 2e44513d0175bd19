"""The Audit screen's list of turns: where each is (committed ✓, pending ●, damaged ✗), its
chat, number, time and question, the newest first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from ..audit_data import AuditedTurn, short_chat_id
from ..render import one_line, plain

QUESTION_CHARS = 30  # of the question in the list of turns


def turn_time(epoch: float) -> str:
    """When a turn started, as ``MM-DD HH:MM`` (UTC); "" when unknown."""
    if not epoch:
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%m-%d %H:%M")


class TurnTable(DataTable[Text]):
    """One row per turn, keyed by turn id; the time column only with ``show_times``."""

    def __init__(self, show_times: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.show_times = show_times
        self.border_title = "Turns"

    def on_mount(self) -> None:
        self.add_column(" ", key="where")
        self.add_column("chat", key="chat")
        self.add_column("#", key="number")
        if self.show_times:
            self.add_column("time (UTC)", key="time")
        self.add_column("question", key="question")

    def fill(self, turns: dict[str, AuditedTurn], order: list[str]) -> None:
        """The rows of ``turns`` in ``order``."""
        self.clear()
        for turn_id in order:
            self.add_row(*self._cells(turns[turn_id]), key=turn_id)

    def _cells(self, audited: AuditedTurn) -> list[Text]:
        s = audited.summary
        if audited.damaged:
            where = plain("✗", "bold red")
        elif audited.committed:
            where = plain("✓", "green")
        else:
            where = plain("●", "yellow")
        cells = [where, plain(short_chat_id(s.chat_id), "dim"), plain(str(s.turn))]
        if self.show_times:
            cells.append(plain(turn_time(s.started_at)))
        # A status other than complete goes first; the column stays as wide.
        status = "" if s.status == "complete" else f"{s.status} "
        question = Text.assemble(
            (status, "bold red" if audited.damaged else "bold yellow"),
            plain(one_line(s.question, QUESTION_CHARS - len(status))),
        )
        cells.append(question)
        return cells
