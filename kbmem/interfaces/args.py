"""The arguments every front end takes, checked alike: text, whole numbers, windows of a
list, revisions, and text that no file or git commit can hold."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from kbmem.config import MAX_REQUEST_CHARS
from kbmem.errors import PageFormatError, ValidationError

# Lists come a window at a time: a whole knowledge base's pages or turns would fill a calling
# model's context (300 pages are 120 kB of JSON), and an HTTP client's memory in the end.
WINDOW = 100
HISTORY_WINDOW = 50  # commits
MAX_WINDOW = 1000
MAX_OFFSET = 10_000_000


def text_arg(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("must be non-empty text", field)
    check_text(value, field)
    return value


def request_text(value: Any, field: str) -> str:
    """Text of a request or a search query, at most ``MAX_REQUEST_CHARS`` long (a query of
    100,000 words kept BM25 busy for 106 s)."""
    text = text_arg(value, field)
    if len(text) > MAX_REQUEST_CHARS:
        raise ValidationError(f"longer than {MAX_REQUEST_CHARS} characters", field)
    return text


def whole_number(value: Any) -> Any:
    """A JSON number that is whole as an ``int``, however it was written: ``5.0`` is 5, as
    JSON Schema's "integer" has it (some clients write every number with a point). Anything
    else (``5.5``, ``"5"``, ``true``) is returned as it was, for the caller to refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def int_arg(value: Any, field: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    value = whole_number(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("must be a whole number", field)
    if not low <= value <= high:
        raise ValidationError(f"must be between {low} and {high}", field)
    return int(value)


def window_args(limit: Any, offset: Any) -> tuple[int, int]:
    """A list's ``limit`` (default ``WINDOW``, at most ``MAX_WINDOW``) and ``offset``
    (default 0), checked alike for every front end."""
    return (
        int_arg(limit, "limit", 1, MAX_WINDOW) or WINDOW,
        int_arg(offset, "offset", 0, MAX_OFFSET) or 0,
    )


def window(items: list[Any], key: str, limit: int, offset: int) -> dict[str, Any]:
    """``items[offset:offset + limit]`` as ``{key, total, next_offset}``; ``next_offset`` is
    null when nothing is left."""
    shown = items[offset : offset + limit]
    end = offset + len(shown)
    return {key: shown, "total": len(items), "next_offset": end if end < len(items) else None}


# A commit id, HEAD, or either with ~N / ^N steps back. Git's other revision forms search or
# read the whole repository (":/<regex>" matches every tenant's commit messages,
# "HEAD:<path>" names any file), so a caller scoped to one tenant gets none of them.
_REVISION = re.compile(r"(?:HEAD|[0-9a-f]{4,40})(?:[~^][0-9]{0,6}){0,20}")
COMMIT_ID = re.compile(r"[0-9a-f]{4,40}")


def rev_arg(value: Any) -> str:
    if value is None:
        return "HEAD"
    if not isinstance(value, str) or not _REVISION.fullmatch(value):
        raise ValidationError(
            "must be a commit id or HEAD, optionally with ~N or ^N (e.g. HEAD~2)", "at"
        )
    return value


@contextlib.contextmanager
def field_named(field: str, *names: str) -> Iterator[None]:
    """A validation error of the core whose field is one of ``names`` (its own names for an
    id: ``pageId``, ``TURN``) re-named ``field``, the name the caller gave the value, so that
    a client, or the model behind it, knows which of its arguments to fix."""
    try:
        yield
    except ValidationError as exc:
        if exc.field in names and not isinstance(exc, PageFormatError):
            exc.field = field
            exc.args = (f"{field}: {exc.problem}",)
        raise


def check_text(value: Any, field: str) -> None:
    """Refuse text that cannot be stored: JSON's escapes can carry half a UTF-16 pair
    ("\\ud800"), which no file or git commit can hold. Walks nested lists and objects."""
    stack = [(value, field)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise ValidationError("holds an unpaired UTF-16 surrogate (\\ud800-\\udfff)", where)
        elif isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in item.items())
            stack.extend((k, where) for k in item)
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))


_SURROGATE = re.compile("[\ud800-\udfff]")
