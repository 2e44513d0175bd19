"""A session in the Summit shape as pydantic models, defined once: the HTTP API, the MCP
server (through :mod:`kbmem.interfaces.schema`, which re-exports them) and ``kbmem ingest``
(through :func:`kbmem.memorize.sessions.session_from_mapping`) validate with them, and the
OpenAPI document and the MCP tool's input schema are generated from them.

Two configurations of one shape: :class:`Session` refuses a field it does not name (a client
of the API or of MCP is told of its misspelt ``timestmap``), :class:`FileSession` ignores
such fields (``kbmem ingest`` reads files that other tools wrote, with fields of their own).

:func:`parse` turns pydantic's first error into a :class:`~kbmem.errors.ValidationError`
naming the field as the client wrote it (``turns[2].timestamp``).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict
from pydantic import ValidationError as PydanticError
from pydantic.json_schema import SkipJsonSchema

from kbmem.errors import ValidationError

M = TypeVar("M", bound=BaseModel)


# A date or time as YAML reads it (``2026-01-05``, unquoted) is taken as it is, and not shown
# in the schema (JSON has no such values); strictly, so that a number (86400) is no date.
Timestamp = (
    str
    | SkipJsonSchema[Annotated[datetime, Strict()]]
    | SkipJsonSchema[Annotated[date, Strict()]]
    | None
)


class Turn(BaseModel):
    """One turn, stored verbatim."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(
        min_length=1,
        description="'user', 'assistant', ...; the speaker when metadata.speaker is not given.",
    )
    content: str = Field(description="What was said, verbatim.")
    timestamp: Timestamp = Field(
        None,
        description="When it was said, ISO 8601 (2026-03-02T09:15:00). Research reads dates "
        "from it.",
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description="Free-form. 'speaker' is the person's name (searched by and shown in "
        "citations); 'id' is the turn id (default t1, t2, ...).",
    )


class _SessionFields(BaseModel):
    """A session's fields but its turns (whose type differs between the two sessions)."""

    sessionId: str | None = Field(
        None,
        description="Stable id: letters, digits, '.', '_', '-' (up to 128). The same id with "
        "changed turns writes new versions of its pages; the same content again changes "
        "nothing. Default: derived from the title and the content.",
    )
    title: str | None = Field(None, description="What the session was, in a few words.")
    tenantId: str | None = Field(
        None,
        description="Leave out: the token (or the server) names the tenant. If given it must "
        "be that tenant, or the session is refused.",
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


class Session(_SessionFields):
    """A conversation in the Summit shape."""

    model_config = ConfigDict(extra="forbid")

    turns: list[Turn] = Field(min_length=1, description="The conversation's turns, in order.")


class FileTurn(Turn):
    """A turn in a file another tool wrote: fields of its own are left be."""

    model_config = ConfigDict(extra="ignore")


class FileSession(_SessionFields):
    """A session in a file another tool wrote (``kbmem ingest``): fields of its own, on the
    session or its turns, are left be."""

    model_config = ConfigDict(extra="ignore")

    turns: list[FileTurn] = Field(min_length=1, description="The conversation's turns, in order.")


def field_of(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as the client wrote the field: ``turns[2].timestamp``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


# Union branches and validators add their own names to an error's location: not fields.
_NOT_FIELDS = frozenset({"str", "int", "float", "bool", "dict", "list", "none", "date", "datetime"})

# pydantic's error types in the words kbmem's other errors use.
_MESSAGES = {
    "extra_forbidden": "is not a field here",
    "missing": "missing",
    "string_type": "must be text",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
}


def parse(
    model: type[M], data: Any, messages: dict[str, str] | None = None, whole: str = "body"
) -> M:
    """``data`` as ``model``, or a :class:`ValidationError` naming the first field at fault
    (``whole`` when the fault is the data itself). ``messages`` overrides the words for some
    of pydantic's error types."""
    try:
        return model.model_validate(data)
    except PydanticError as exc:
        first = exc.errors(include_url=False)[0]
        loc = tuple(
            p
            for p in first["loc"]
            if not str(p).startswith("function-") and str(p) not in _NOT_FIELDS
        )
        kind = first["type"]
        words = {**_MESSAGES, **(messages or {})}
        if kind in words:
            message = words[kind]
        elif kind == "too_short" and isinstance(first.get("input"), list | str | dict):
            message = "is empty"
        else:
            message = str(first["msg"]).lower()
        if kind.endswith("_type") and kind in _MESSAGES:
            message += f", got {type(first.get('input')).__name__}"
        raise ValidationError(message, field_of(loc) or whole) from None
