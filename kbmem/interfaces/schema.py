"""Every body the front ends take or give, as pydantic models defined once: the HTTP API's
routes (``GET /openapi.json`` is generated from them) and the MCP server's tools (their
``inputSchema`` and ``outputSchema`` are generated from them, and their arguments checked by
them) share them, so that the schema a client sees and the check a call meets cannot drift
apart. The session and its turns live one layer down, in :mod:`kbmem.memorize.schema`, where
``kbmem ingest`` uses them too; they are re-exported here.

Arguments refuse a field they do not name (a misspelt ``max_page`` would otherwise silently
be the default); results allow fields beyond the ones named (the service adds fields over
time, and a client must not fail on them). The HTTP-only Summit bodies are strict about
integers (``"5"`` and ``true`` refused, ``5.0`` taken as 5); the shared arguments take what
JSON Schema's integer takes, and ``"5"`` as well, which the MCP Inspector CLI sends for
``--tool-arg k=5`` (the HTTP routes check those fields in the service, strictly).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from kbmem.config import HARD_CAPS, MAX_REQUEST_CHARS
from kbmem.interfaces.args import HISTORY_WINDOW, MAX_OFFSET, MAX_WINDOW, WINDOW
from kbmem.memorize.schema import FileSession, FileTurn, Session, Turn, field_of, parse

__all__ = [
    "FileSession",
    "FileTurn",
    "Session",
    "Turn",
    "field_of",
    "parse",
]

MODES = ("fast", "deep")


def _whole(value: Any) -> Any:
    """A JSON number that is whole as an int (``5.0`` is 5, as JSON Schema's integer has
    it); ``"5"`` and ``true`` stay as they were, for the strict check to refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole), Field(strict=True)]


class Arguments(BaseModel):
    """A request body or a tool's arguments: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


class _Body(Arguments):
    """A body of the Summit routes, checked by this model alone: strict."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Result(BaseModel):
    """An answer: the fields a client can rely on, and whatever else the service adds."""

    model_config = ConfigDict(extra="allow")


REVISION_DOC = (
    "A commit id, or HEAD with ~N or ^N steps back ('HEAD~3'), to read the memory as it was "
    "then. Leave out for now."
)
Revision = Field(None, description=REVISION_DOC)
Limit = Field(None, ge=1, le=MAX_WINDOW, description=f"Most items to return (default {WINDOW}).")
Offset = Field(
    None,
    ge=0,
    le=MAX_OFFSET,
    description="Items to skip: the next_offset of the previous call, to read on.",
)


# -- the Summit routes -----------------------------------------------------------------------


class SummitSession(Session):
    """A session as the Summit note writes it, ``description`` included (kept in the
    session's metadata)."""

    description: str | None = Field(None, description="What the session was about.")


class IngestedPage(_Body):
    id: str
    sequence: int
    header: dict[str, Any]


class IngestSessionResponse(_Body):
    sessionId: str
    memo: str
    pages: list[IngestedPage]


class Budgets(_Body):
    """Research budgets; values above the note's caps are lowered to them, not refused."""

    maxPages: WholeNumber | None = Field(None, ge=1)
    maxReflectionDepth: WholeNumber | None = Field(None, ge=0)
    maxOutputTokens: WholeNumber | None = Field(None, ge=50, le=20_000)
    timeBudgetS: float | None = Field(None, gt=0)

    def clamped(self) -> dict[str, float | None]:
        pages, depth, seconds = self.maxPages, self.maxReflectionDepth, self.timeBudgetS
        return {
            "max_pages": None if pages is None else min(pages, HARD_CAPS["max_pages"]),
            "depth": None if depth is None else min(depth, HARD_CAPS["max_reflection_depth"]),
            "max_tokens": self.maxOutputTokens,
            "time_budget_s": None if seconds is None else min(seconds, HARD_CAPS["time_budget_s"]),
        }


class BuildContextRequest(_Body):
    """``mode``: ``deep`` (the default) runs the plan-search-integrate-reflect loop to its
    depth budget; ``fast`` is one pass with no reflection (depth 0), whatever the budgets say."""

    tenantId: str
    agentId: str | None = None
    sessionId: str | None = None
    request: str
    budgets: Budgets | None = None
    mode: Literal["fast", "deep"] = "deep"


# -- arguments ------------------------------------------------------------------------------


class ResearchArgs(Arguments):
    request: str = Field(
        min_length=1,
        max_length=MAX_REQUEST_CHARS,
        description="The question or task, in plain words ('Who owns the scheduler?', "
        "'What did we decide about the data store, and why?').",
    )
    max_pages: int | None = Field(None, ge=1, le=32, description="Most pages to read (default 8).")
    depth: int | None = Field(
        None,
        ge=0,
        le=5,
        description="Reflection rounds that search again for what is missing (default 2).",
    )
    max_tokens: int | None = Field(
        None, ge=50, le=20_000, description="Budget of the briefing (default 1500)."
    )
    engine: Literal["offline", "llm"] | None = Field(
        None,
        description="'offline' (deterministic, the default) or 'llm' (the model the server "
        "was started with plans and integrates; needs one).",
    )
    time_budget_s: float | None = Field(
        None,
        gt=0,
        le=HARD_CAPS["time_budget_s"],
        description="Seconds the research may take (default 60); when they run out, the "
        "briefing found so far comes back, marked cutShort.",
    )


class SearchRequest(Arguments):
    query: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="What to look for.")
    tool: Literal["hybrid", "bm25", "dense"] | None = Field(
        None,
        description="'bm25' for exact words and names, 'dense' for meaning, 'hybrid' "
        "(default) for both.",
    )
    k: int | None = Field(None, ge=1, le=100, description="How many hits (default 10).")


class ResearchRequest(ResearchArgs):
    """``POST /v1/research``: the research's arguments, the trace with the briefing, and
    server-sent events as it works."""

    trace: bool = Field(False, description="Give every step of the research with the briefing.")
    stream: bool = Field(
        False,
        description="Answer text/event-stream: a trace event per step, then the briefing.",
    )


class ReadPageArgs(Arguments):
    page_id: str = Field(
        min_length=1,
        description="The page id, e.g. '2026-03-02-welcome-and-offsite/1' or "
        "'notes/team-roster.md'.",
    )
    at: str | None = Revision
    raw: bool | None = Field(
        None,
        description="Give a page whose header cannot be read as stored, with the problem, "
        "instead of an error (default false).",
    )


class ListPagesArgs(Arguments):
    at: str | None = Revision
    limit: int | None = Limit
    offset: int | None = Offset


class PageHistoryArgs(Arguments):
    page_id: str | None = Field(
        None,
        min_length=1,
        description="The page id; leave out for the history of the whole memory.",
    )
    limit: int | None = Field(
        None,
        ge=1,
        le=MAX_WINDOW,
        description=f"Most commits to list, newest first (default {HISTORY_WINDOW}).",
    )
    before: str | None = Field(
        None,
        min_length=4,
        max_length=40,
        description="List only commits older than this one: the next_before of the previous call.",
    )


class MemorizeSessionArgs(Arguments):
    session: Session


class MessageRequest(Arguments):
    message: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="What to say.")


class OpenChatRequest(Arguments):
    chat_id: str | None = Field(
        None,
        min_length=1,
        description="Continue this chat: the chat_id an earlier call returned. Leave out to "
        "start a new chat.",
    )


class ChatArgs(MessageRequest, OpenChatRequest):
    """The ``chat`` tool: a message, to an open chat or a new one."""


class ListTurnsArgs(Arguments):
    chat_id: str | None = Field(
        None, min_length=1, description="Only this chat's turns; leave out for all chats."
    )
    limit: int | None = Limit
    offset: int | None = Offset


class AuditTurnArgs(Arguments):
    turn_id: str = Field(
        min_length=1, description="'<chat-id>/<n>', as chat and list_turns return it."
    )


# -- results ----------------------------------------------------------------------------------


class IndexingProgress(Result):
    """How far a build that brings the index to HEAD has got, in intervals."""

    done: WholeNumber
    total: WholeNumber


class IndexStatus(Result):
    """Which commit an answer's index reflects: every search result set and briefing carries
    it, so that an answer from an index behind HEAD says so (kbmem.index.freshness)."""

    commit: str | None = Field(description="The commit the index was built from.")
    pendingCommits: WholeNumber = Field(
        description="The tenant's commits after it, up to HEAD, not in the index yet."
    )
    indexing: IndexingProgress | None = Field(
        None, description="A build catching up, when one is running."
    )


class ResearchResult(Result):
    executiveSummary: str
    keyFacts: list[str]
    openQuestions: list[str]
    evidence: list[dict[str, Any]]
    index: IndexStatus | None = None
    cutShort: bool = False  # the time budget ran out before research was done


class SearchResponse(Result):
    """What a search answers: the hits, and the index they come from."""

    query: str
    tool: str
    hits: list[dict[str, Any]]
    index: IndexStatus


class PageResult(Result):
    id: str
    commit: str
    text: str


class ListPagesResult(Result):
    pages: list[dict[str, Any]]
    total: int
    next_offset: int | None
    commit: str | None


class PageHistoryResult(Result):
    commits: list[dict[str, Any]]
    more: bool
    next_before: str | None


class MemorizeSessionResult(Result):
    sessionId: str
    pages: list[str]
    commit: str | None
    tenantCreated: bool


class ChatResult(Result):
    chat_id: str
    answer: str


class ListTurnsResult(Result):
    turns: list[dict[str, Any]]
    total: int
    next_offset: int | None


class AuditTurnResult(Result):
    pass


class ErrorDetail(_Body):
    code: str
    message: str
    field: str | None = None
    hint: str | None = None


class ErrorResponse(_Body):
    error: ErrorDetail


def schemas() -> dict[str, Any]:
    """The JSON Schemas of every model, for the OpenAPI document's components."""
    from pydantic.json_schema import models_json_schema

    models: list[type[BaseModel]] = [
        SearchRequest,
        ResearchRequest,
        OpenChatRequest,
        MessageRequest,
        Session,
        SummitSession,
        IngestSessionResponse,
        BuildContextRequest,
        ErrorResponse,
        IndexStatus,
        SearchResponse,
    ]
    _, top = models_json_schema(
        [(m, "validation") for m in models], ref_template="#/components/schemas/{model}"
    )
    return dict(top.get("$defs", {}))
