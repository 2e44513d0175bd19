"""The bodies of the Summit routes (``/memory/*``) as pydantic models, defined once: the HTTP
API validates with them and ``GET /openapi.json`` describes them.

Validation keeps the API's error contract: a failure is a :class:`ValidationError` naming the
field as the client wrote it (``budgets.maxPages``, ``turns[2].timestamp``), integers are strict
(``"5"`` and ``true`` refused, ``5.0`` taken as 5), and an unknown field is refused. The session
itself is still checked whole by :func:`kbmem.memorize.sessions.session_from_mapping`, which the
CLI's ingest shares, so that a turn's timestamp or id is judged one way everywhere.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from kbmem.config import HARD_CAPS
from kbmem.errors import ValidationError

MODES = ("fast", "deep")
M = TypeVar("M", bound=BaseModel)


def _whole(value: Any) -> Any:
    """A JSON number that is whole as an int (``5.0`` is 5, as JSON Schema's integer has
    it); ``"5"`` and ``true`` stay as they were, for the strict check to refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole), Field(strict=True)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SummitTurn(_Body):
    role: str
    content: str
    timestamp: str | int | float | None = None
    metadata: dict[str, Any] | None = None


class SummitSession(_Body):
    """A session as the Summit note writes it (``tenantId`` may be left out: the token names
    the tenant)."""

    tenantId: str | None = None
    sessionId: str | None = None
    agentId: str | None = None
    title: str | None = None
    description: str | None = None
    classification: str | None = None
    policyTags: list[str] | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    originRunId: str | None = None
    requestIntent: str | None = None
    turns: list[SummitTurn]


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


class SearchRequest(_Body):
    query: str
    tool: Literal["hybrid", "bm25", "dense"] | None = None
    k: WholeNumber | None = Field(None, ge=1, le=100)


class ResearchRequest(_Body):
    request: str
    max_pages: WholeNumber | None = Field(None, ge=1, le=32)
    depth: WholeNumber | None = Field(None, ge=0, le=5)
    max_tokens: WholeNumber | None = Field(None, ge=50, le=20_000)
    engine: Literal["offline", "llm"] | None = None
    trace: bool = False
    stream: bool = False
    time_budget_s: float | None = Field(None, gt=0, le=HARD_CAPS["time_budget_s"])


class IndexingProgress(_Body):
    """How far a build that brings the index to HEAD has got, in intervals."""

    done: WholeNumber
    total: WholeNumber


class IndexStatus(_Body):
    """Which commit an answer's index reflects: every search result set and briefing carries
    it, so that an answer from an index behind HEAD says so (kbmem.index.freshness)."""

    commit: str | None = Field(description="The commit the index was built from.")
    pendingCommits: WholeNumber = Field(
        description="The tenant's commits after it, up to HEAD, not in the index yet."
    )
    indexing: IndexingProgress | None = Field(
        None, description="A build catching up, when one is running."
    )


class SearchResponse(BaseModel):
    """What a search answers: the hits, and the index they come from."""

    query: str
    tool: str
    hits: list[dict[str, Any]]
    index: IndexStatus


class OpenChatRequest(_Body):
    chat_id: str | None = None


class MessageRequest(_Body):
    message: str


class ErrorDetail(_Body):
    code: str
    message: str
    field: str | None = None
    hint: str | None = None


class ErrorResponse(_Body):
    error: ErrorDetail


def field_of(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as the client wrote the field: ``turns[2].timestamp``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "body"


def parse(model: type[M], body: dict[str, Any]) -> M:
    """``body`` as ``model``, or a ValidationError naming the first field at fault."""
    try:
        return model.model_validate(body)
    except PydanticError as exc:
        first = exc.errors()[0]
        loc = tuple(p for p in first["loc"] if not str(p).startswith("function-"))
        # Union branches add their type to the location ("str", "int"): not a field.
        loc = tuple(p for p in loc if p not in ("str", "int", "float", "bool", "dict", "list"))
        kind = first["type"]
        if kind == "extra_forbidden":
            message = "is not a field here"
        elif kind == "missing":
            message = "missing"
        else:
            message = str(first["msg"]).lower()
        raise ValidationError(message, field_of(loc)) from None


def schemas() -> dict[str, Any]:
    """The JSON Schemas of every model, for the OpenAPI document's components."""
    from pydantic.json_schema import models_json_schema

    models: list[type[BaseModel]] = [
        SearchRequest,
        ResearchRequest,
        OpenChatRequest,
        MessageRequest,
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
