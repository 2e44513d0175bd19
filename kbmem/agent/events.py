"""What a chat turn reports while it runs: small typed events, each JSON-serialisable.

A :class:`~kbmem.agent.session.ChatSession` calls ``on_event(event)`` on the thread that runs
``send`` (the TUI's worker thread), in this order for one turn::

    TurnStarted
      (ToolCallStarted (ResearchTrace ...) ToolCallFinished)*   tool calls, any number
      ReplyDelta*                                                the streamed reply
      (ToolCallStarted ... ToolCallFinished ReplyDelta*)*        the LLM agent may call
                                                                 tools mid-answer
      Notice*                                                    degradations, retries
    TurnFinished                                                 journaled: safe on disk
    BatchCommitted?                                              every chat.batch_turns turns

Dispatch on the class (``isinstance`` or ``match``) or on ``event.kind``; ``to_dict()`` gives
the JSON form (``{"kind": ..., "chat_id": ..., "turn": ..., "at": ..., ...}``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from kbmem.research.types import TraceEvent


@dataclass(kw_only=True)
class AgentEvent:
    """Base of every chat event: which chat, which turn (0 for chat-wide events), when."""

    kind: ClassVar[str] = "event"
    chat_id: str
    turn: int
    at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            data[f.name] = value.to_dict() if hasattr(value, "to_dict") else value
        data["at"] = round(self.at, 3)
        return data


@dataclass(kw_only=True)
class TurnStarted(AgentEvent):
    """The user's message was accepted; the agent starts working on it."""

    kind: ClassVar[str] = "turn_started"
    message: str
    agent: str  # "offline" | "llm"
    model: str | None = None


@dataclass(kw_only=True)
class ToolCallStarted(AgentEvent):
    """A tool call begins (``research``, ``search``, ``read_page`` or ``expand``)."""

    kind: ClassVar[str] = "tool_call_started"
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(kw_only=True)
class ResearchTrace(AgentEvent):
    """One step of the researcher inside a ``research`` tool call, passed through as is."""

    kind: ClassVar[str] = "research_trace"
    call_id: str
    trace: TraceEvent


@dataclass(kw_only=True)
class ToolCallFinished(AgentEvent):
    """A tool call ended: how long it took, how much it returned, the intervals it found
    (``Interval.to_dict()`` form) or the error that went back to the model instead."""

    kind: ClassVar[str] = "tool_call_finished"
    call_id: str
    name: str
    arguments: dict[str, Any]
    duration_ms: float
    result_chars: int
    intervals: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


@dataclass(kw_only=True)
class ReplyDelta(AgentEvent):
    """A piece of the reply as it streams; the pieces joined are the answer."""

    kind: ClassVar[str] = "reply_delta"
    text: str


@dataclass(kw_only=True)
class Notice(AgentEvent):
    """Something the user should know that is not an error of the turn: a degradation (the
    model cannot call tools), a batch commit waiting for another writer, recovered turns."""

    kind: ClassVar[str] = "notice"
    level: str  # "info" | "warning" | "error"
    message: str


@dataclass(kw_only=True)
class TurnFinished(AgentEvent):
    """The turn is over and journaled (flushed and fsynced): it can no longer be lost.
    ``status`` is ``complete``, ``partial`` (the model's stream died; the answer is what came
    before, marked), ``interrupted`` (cancel or Ctrl-C) or ``failed`` (``error`` says why)."""

    kind: ClassVar[str] = "turn_finished"
    status: str
    answer: str
    duration_ms: float
    pending_turns: int
    error: str | None = None


@dataclass(kw_only=True)
class BatchCommitted(AgentEvent):
    """One commit landed with the snapshots of turns ``first``..``last`` and the chat's pages
    (trailer ``Kbmem-Turns: <chat-id> <first>-<last>``)."""

    kind: ClassVar[str] = "batch_committed"
    first: int
    last: int
    commit: str
    duration_ms: float
    recovered: bool = False  # turns a crashed earlier run had left in the journal
