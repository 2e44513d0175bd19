"""The state of one running turn, shared by the agent and its tools: what was asked, the
events sink, the cancel flag, and everything the provenance snapshot will record."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbmem.agent.events import AgentEvent, Notice, ReplyDelta
from kbmem.agent.records import ContextItem, ToolCallRecord, TurnRecord

if TYPE_CHECKING:
    from kbmem.agent.tools import AgentTools


class TurnCancelled(Exception):
    """Raised inside a turn when ``ChatSession.cancel()`` was called."""


@dataclass
class TurnContext:
    chat_id: str
    turn: int
    tenant: str
    message: str
    history: list[tuple[int, str, str]]
    tools: AgentTools
    emit: Callable[[AgentEvent], None]
    cancel_event: threading.Event
    started_at: float = field(default_factory=time.time)
    answer_parts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    context: list[ContextItem] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    status: str = "complete"
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def answer(self) -> str:
        return "".join(self.answer_parts)

    def check_cancel(self) -> None:
        if self.cancel_event.is_set():
            raise TurnCancelled()

    def reply(self, text: str) -> None:
        """Add ``text`` to the answer and stream it."""
        if not text:
            return
        self.answer_parts.append(text)
        self.emit(ReplyDelta(chat_id=self.chat_id, turn=self.turn, text=text))

    def note(self, text: str) -> None:
        """A line of reasoning for ``reasoning.md``."""
        self.reasoning.append(text)

    def notice(self, message: str, level: str = "info") -> None:
        self.note(message)
        self.emit(Notice(chat_id=self.chat_id, turn=self.turn, level=level, message=message))

    def add_context(self, item: ContextItem) -> None:
        """Record an interval the turn read (once per line range and commit: cited when
        any record of it is; shown in part only when every record of it was, since one
        that showed it whole means the agent read it whole)."""
        for existing in self.context:
            if (existing.path, existing.start, existing.end, existing.commit) == (
                item.path,
                item.start,
                item.end,
                item.commit,
            ):
                existing.cited = existing.cited or item.cited
                existing.score = max(existing.score, item.score)
                if not item.shown:
                    existing.shown = ""
                return
        self.context.append(item)

    def mark(self, status: str, error: str, shown: str | None = None) -> None:
        """End the turn early with ``status``; the answer so far is kept and marked with
        ``shown`` (default: the error). The answer is memorized with the chat, so a raw
        provider message belongs in ``error`` (the turn's record), not in the answer."""
        self.status = status
        self.error = error
        marker = f"[{status}: {shown or error}]"
        if self.answer_parts:
            self.reply(("\n\n" if not self.answer.endswith("\n") else "\n") + marker)
        else:
            self.reply(marker)
        self.note(f"Turn ended early ({status}): {error}")

    def record(self, agent: str, model: str | None) -> TurnRecord:
        return TurnRecord(
            chat_id=self.chat_id,
            turn=self.turn,
            tenant=self.tenant,
            question=self.message,
            answer=self.answer,
            status=self.status,
            agent=agent,
            started_at=self.started_at,
            finished_at=time.time(),
            model=model,
            tool_calls=list(self.tool_calls),
            context=list(self.context),
            reasoning=list(self.reasoning),
            error=self.error,
        )
