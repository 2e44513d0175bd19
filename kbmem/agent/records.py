"""A finished turn as data: what was asked, which tools ran, which intervals the answer rested
on, and the answer. This is what the journal holds and what the provenance snapshot renders."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kbmem.index.intervals import Interval

TURN_STATUSES = ("complete", "partial", "interrupted", "failed")


@dataclass
class ContextItem:
    """One interval a turn read: a line range of a page at a commit, with the retriever that
    found it, its score, the tool call that brought it, and whether the answer cites it."""

    page_id: str
    path: str
    start: int
    end: int
    commit: str
    retriever: str
    score: float
    blob: str = ""
    turn_ids: list[str] = field(default_factory=list)
    call_id: str = ""
    cited: bool = False  # the answer cites it as [page-id:Lstart-Lend]
    # What the agent was shown of the interval when that was only part of it (a long turn
    # that the briefing carried in part, "…" marking what it left out); empty: all of it.
    shown: str = ""

    @classmethod
    def from_interval(
        cls,
        interval: Interval,
        retriever: str,
        score: float,
        call_id: str = "",
        cited: bool = False,
    ) -> ContextItem:
        return cls(
            interval.page_id,
            interval.path,
            interval.start,
            interval.end,
            interval.commit,
            retriever,
            round(float(score), 6),
            interval.blob,
            list(interval.turn_ids),
            call_id,
            cited,
        )

    def interval(self) -> Interval:
        return Interval(
            self.page_id,
            self.path,
            self.start,
            self.end,
            self.commit,
            self.blob,
            "line",
            tuple(self.turn_ids),
        )

    def citation(self) -> str:
        return f"[{self.page_id}:L{self.start}-L{self.end}]"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContextItem:
        return cls(
            page_id=str(data["page_id"]),
            path=str(data["path"]),
            start=int(data["start"]),
            end=int(data["end"]),
            commit=str(data.get("commit") or ""),
            retriever=str(data.get("retriever") or ""),
            score=float(data.get("score") or 0.0),
            blob=str(data.get("blob") or ""),
            turn_ids=[str(t) for t in data.get("turn_ids") or []],
            call_id=str(data.get("call_id") or ""),
            cited=bool(data.get("cited", False)),
            shown=str(data.get("shown") or ""),
        )


@dataclass
class ToolCallRecord:
    """One tool call of a turn, as ``tool_calls.jsonl`` stores it (one JSON object a line)."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    started_at: float
    finished_at: float
    result_chars: int = 0
    intervals: list[dict[str, Any]] = field(default_factory=list)  # Interval.to_dict() form
    error: str | None = None
    origin: str = "model"  # "model" (the LLM asked for it) | "agent" (the agent's own call)
    summary: str = ""  # one line for reasoning.md: what the call found or used
    trace: list[dict[str, Any]] = field(default_factory=list)  # research steps, if research

    @property
    def duration_ms(self) -> float:
        return round((self.finished_at - self.started_at) * 1000, 1)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["started_at"] = round(self.started_at, 6)
        data["finished_at"] = round(self.finished_at, 6)
        data["duration_ms"] = self.duration_ms
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRecord:
        return cls(
            call_id=str(data["call_id"]),
            name=str(data["name"]),
            arguments=dict(data.get("arguments") or {}),
            started_at=float(data.get("started_at") or 0.0),
            finished_at=float(data.get("finished_at") or 0.0),
            result_chars=int(data.get("result_chars") or 0),
            intervals=list(data.get("intervals") or []),
            error=data.get("error"),
            origin=str(data.get("origin") or "model"),
            summary=str(data.get("summary") or ""),
            trace=list(data.get("trace") or []),
        )


@dataclass
class TurnRecord:
    """A finished turn of a chat: the unit the journal stores and a snapshot commits."""

    chat_id: str
    turn: int
    tenant: str
    question: str
    answer: str
    status: str  # one of TURN_STATUSES
    agent: str  # "offline" | "llm"
    started_at: float
    finished_at: float
    model: str | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    context: list[ContextItem] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)  # the agent's notes, in order
    error: str | None = None

    @property
    def turn_id(self) -> str:
        """``<chat-id>/<turn>``: how ``kbmem audit`` names a turn."""
        return f"{self.chat_id}/{self.turn}"

    @property
    def duration_ms(self) -> float:
        return round((self.finished_at - self.started_at) * 1000, 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chat_id": self.chat_id,
            "turn": self.turn,
            "tenant": self.tenant,
            "question": self.question,
            "answer": self.answer,
            "status": self.status,
            "agent": self.agent,
            "model": self.model,
            "started_at": round(self.started_at, 6),
            "finished_at": round(self.finished_at, 6),
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "context": [c.to_dict() for c in self.context],
            "reasoning": list(self.reasoning),
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnRecord:
        return cls(
            chat_id=str(data["chat_id"]),
            turn=int(data["turn"]),
            tenant=str(data["tenant"]),
            question=str(data.get("question") or ""),
            answer=str(data.get("answer") or ""),
            status=str(data.get("status") or "complete"),
            agent=str(data.get("agent") or "offline"),
            started_at=float(data.get("started_at") or 0.0),
            finished_at=float(data.get("finished_at") or 0.0),
            model=data.get("model"),
            tool_calls=[ToolCallRecord.from_dict(c) for c in data.get("tool_calls") or []],
            context=[ContextItem.from_dict(c) for c in data.get("context") or []],
            reasoning=[str(r) for r in data.get("reasoning") or []],
            error=data.get("error"),
        )
