"""The chat agent: turns with tool calls and streamed replies, per-turn provenance, a journal
and batch commits. Start at :class:`ChatSession`; events are in :mod:`kbmem.agent.events`.

Importing the events or records stays light; ``ChatSession`` (which loads the researcher and
its indexes) is imported on first use."""

from typing import Any

from kbmem.agent.events import (
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
from kbmem.agent.records import ContextItem, ToolCallRecord, TurnRecord

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
]


def __getattr__(name: str) -> Any:
    if name == "ChatSession":
        from kbmem.agent.session import ChatSession

        return ChatSession
    raise AttributeError(name)
