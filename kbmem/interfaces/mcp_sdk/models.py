"""The MCP tools' arguments and results as pydantic models: the tools' ``inputSchema`` and
``outputSchema`` are generated from them, and arguments are checked by them, so the schema a
client sees and the check a call meets cannot drift apart.

Shaped like the hand-written schemas of the first MCP server (the same names, bounds and
descriptions), so that clients built against it keep working. Results allow fields beyond
the ones named: the service adds fields over time, and a client must not fail on them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kbmem.config import HARD_CAPS, MAX_REQUEST_CHARS
from kbmem.interfaces.service import HISTORY_WINDOW, MAX_OFFSET, MAX_WINDOW, WINDOW

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


class Arguments(BaseModel):
    """A tool's arguments: unknown ones are refused (a misspelt name would otherwise be
    silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class Result(BaseModel):
    """A tool's result: the fields a client can rely on, and whatever else the service adds."""

    model_config = ConfigDict(extra="allow")


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


class SearchArgs(Arguments):
    query: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="What to look for.")
    tool: Literal["hybrid", "bm25", "dense"] | None = Field(
        None,
        description="'bm25' for exact words and names, 'dense' for meaning, 'hybrid' "
        "(default) for both.",
    )
    k: int | None = Field(None, ge=1, le=100, description="How many hits (default 10).")


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


class Turn(Arguments):
    """One turn, stored verbatim."""

    role: str = Field(
        min_length=1,
        description="'user', 'assistant', ...; the speaker when metadata.speaker is not given.",
    )
    content: str = Field(description="What was said, verbatim.")
    timestamp: str | None = Field(
        None,
        description="When it was said, ISO 8601 (2026-03-02T09:15:00). Research reads dates "
        "from it.",
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description="Free-form. 'speaker' is the person's name (searched by and shown in "
        "citations); 'id' is the turn id (default t1, t2, ...).",
    )


class Session(Arguments):
    """A conversation in the Summit shape."""

    turns: list[Turn] = Field(min_length=1, description="The conversation's turns, in order.")
    sessionId: str | None = Field(
        None,
        description="Stable id: letters, digits, '.', '_', '-' (up to 128). The same id with "
        "changed turns writes new versions of its pages; the same content again changes "
        "nothing. Default: derived from the title and the content.",
    )
    title: str | None = Field(None, description="What the session was, in a few words.")
    tenantId: str | None = Field(
        None,
        description="Leave out. If given it must be this server's tenant, or the session is "
        "refused.",
    )
    agentId: str | None = Field(None, description="The agent that took part, if any.")
    classification: str | None = Field(
        None, description="Sensitivity label kept in the page header (default 'internal')."
    )
    policyTags: list[str] | None = Field(None, description="Policy labels kept in the header.")
    tags: list[str] | None = Field(None, description="Topics, kept in the page header.")
    metadata: dict[str, Any] | None = Field(
        None, description="Free-form, kept in the session record."
    )
    originRunId: str | None = Field(None, description="The run that produced the session.")
    requestIntent: str | None = Field(
        None, description="What the session was for, kept in the page header."
    )


class MemorizeSessionArgs(Arguments):
    session: Session


class ChatArgs(Arguments):
    message: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS, description="What to say.")
    chat_id: str | None = Field(
        None,
        min_length=1,
        description="Continue this chat: the chat_id an earlier call returned. Leave out to "
        "start a new chat.",
    )


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


class IndexStatus(BaseModel):
    """Which commit the answer's index reflects and how far behind HEAD it is: when
    ``pendingCommits`` is not 0, newer memory may be missing from the answer."""

    commit: str | None
    pendingCommits: int
    indexing: dict[str, int] | None = None  # {done, total} of a build catching up


class ResearchResult(Result):
    executiveSummary: str
    keyFacts: list[str]
    openQuestions: list[str]
    evidence: list[dict[str, Any]]
    index: IndexStatus | None = None
    cutShort: bool = False  # the time budget ran out before research was done


class SearchResult(Result):
    query: str
    tool: str
    hits: list[dict[str, Any]]
    index: IndexStatus | None = None


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
