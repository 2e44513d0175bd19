"""The chat agent: turns with tool calls and streamed replies, per-turn provenance, a journal
and batch commits. Start at :class:`ChatSession`; events are in :mod:`kbmem.agent.events`."""

from .events import (
    AgentEvent,
    BatchCommitted,
    Notice,
    ReplyDelta,
    ResearchTrace,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from .records import ContextItem, ToolCallRecord, TurnRecord
from .session import ChatSession, check_chat_id, new_chat_id

__all__ = [
    "AgentEvent",
    "BatchCommitted",
    "ChatSession",
    "ContextItem",
    "Notice",
    "ReplyDelta",
    "ResearchTrace",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolCallStarted",
    "TurnFinished",
    "TurnRecord",
    "TurnStarted",
    "check_chat_id",
    "new_chat_id",
]
