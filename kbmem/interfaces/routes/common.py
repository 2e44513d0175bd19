"""What every HTTP route does with a request: the state the routes share, the token, the body
read as it streams and checked before anything is done with it, the query string, the shape
of an answer (JSON, camelCase twins), and what the OpenAPI document says of errors.

The order of the checks is the old server's, and it matters: the route (404, 405, in
:mod:`kbmem.interfaces.routes.guard`), then the token (401), then the flag (503), then the
query string, and only then the body, read as it streams against the route's size limit
(411, 413). Bodies are parsed here, not by FastAPI: FastAPI would read the body before any
check, and the service layer's own messages ("must be between 1 and 32") are the contract.
The OpenAPI document still names each body's model, and each query parameter, from the
models of :mod:`kbmem.interfaces.schema`.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import anyio.to_thread
from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.requests import ClientDisconnect

from kbmem.agent.provenance import TurnFormatError
from kbmem.errors import KbmemError, ValidationError
from kbmem.interfaces import envelope
from kbmem.interfaces.envelope import ApiError, error_body, json_response
from kbmem.interfaces.schema import ErrorResponse
from kbmem.interfaces.service import Memory, check_text, field_named
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase

log = logging.getLogger("kbmem.interfaces.app")

SMALL_BODY = 1024 * 1024  # every route's body but a session's
INLINE_PARSE_BYTES = 64 * 1024  # bodies parsed on the event loop; larger ones in a thread
MAX_LARGE_REQUESTS = 2  # sessions over SMALL_BODY read and memorized at once; more get 503
# A search is run on the event loop, without the hop to a worker thread (~0.3 ms of a ~3 ms
# search), only while it is the server's one request and its kind took less than this much
# CPU time last time: it then holds up only requests that arrive meanwhile, and by about
# this much (docs/decisions/search-on-the-event-loop.md).
INLINE_SEARCH_MS = 10.0
ERROR_CODES = {
    400: "invalid",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    422: "unreadable_page",
    429: "too_many",
    502: "llm",
}


def error_of(exc: KbmemError) -> dict[str, Any]:
    """A KbmemError as the client sees it. A server-side failure (storage, a damaged token
    file) is logged in full and answered without its details: they name files on the server,
    and the client can do nothing about them."""
    status = exc.http_status
    if status >= 500 and status != 502:
        log.error("%s: %s", type(exc).__name__, exc)
        return error_body("internal", "the server could not do this; see its log")
    field_name = getattr(exc, "field", None)
    message = (getattr(exc, "problem", None) if field_name else None) or str(exc)
    code = "unreadable_turn" if isinstance(exc, TurnFormatError) else None
    return error_body(code or ERROR_CODES.get(status, "error"), message, field_name, exc.hint)


@dataclass
class ApiState:
    """What the routes share: the knowledge base, its tokens, one :class:`Memory` per tenant
    (opened on first use, closed with :meth:`close_memories`), the flag and the limits."""

    kb: KnowledgeBase
    model: str | None
    tokens: TokenStore
    gam_enabled: bool
    max_body: int
    large_slots: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(MAX_LARGE_REQUESTS)
    )
    memories: dict[str, Memory] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Requests being answered (the guard counts them; touched only on the event loop).
    in_flight: int = 0
    # The CPU time of the last search of each (tenant, tool), in ms (see INLINE_SEARCH_MS).
    search_ms: dict[tuple[str, str], float] = field(default_factory=dict)

    def memory(self, tenant: str) -> Memory:
        with self.lock:
            if tenant not in self.memories:
                self.memories[tenant] = Memory(self.kb, tenant, self.model)
            return self.memories[tenant]

    def open_memories(self) -> list[Memory]:
        with self.lock:
            return list(self.memories.values())

    def close_memories(self) -> None:
        """Commit every tenant's open chats; one that cannot (the knowledge base stayed
        locked) keeps its turns in the journal, and the others are still tried."""
        with self.lock:
            memories = list(self.memories.values())
            self.memories.clear()
        for memory in memories:
            try:
                memory.close()
            except KbmemError as exc:
                log.warning("chats of tenant %s not committed yet: %s", memory.tenant, exc)


# -- the request's own record: what the guard middleware and the routes tell each other --------


@dataclass
class Exchange:
    route: str = "unmatched"
    status: int = 0
    body_read: bool = True  # False while a body the client sent is unread
    large: bool = False  # holds one of the large-request slots


def exchange(request: Request) -> Exchange:
    found: Exchange = request.scope["kbmem.exchange"]
    return found


# -- checks every route makes ------------------------------------------------------------------


def tenant_of(state: ApiState, request: Request) -> str:
    return envelope.tenant_of(state.tokens, request.headers.getlist("authorization"))


def body_length(request: Request, limit: int) -> int:
    """The body's length, from exactly one plain Content-Length: anything looser (``+17``,
    two lengths, chunked) is refused, since a proxy in front may read it otherwise."""
    if request.headers.get("transfer-encoding"):
        raise ApiError(411, "length_required", "send the body with a Content-Length")
    lengths = request.headers.getlist("content-length")
    if not lengths:
        raise ApiError(411, "length_required", "send a JSON body with a Content-Length")
    if len(lengths) > 1 or not _DIGITS.fullmatch(lengths[0].strip()):
        raise ApiError(400, "invalid", "Content-Length must be one whole number")
    length = int(lengths[0])
    if length > limit:
        raise ApiError(
            413, "too_large", f"the body is {length} bytes; at most {limit} are accepted here"
        )
    return length


async def json_body(
    request: Request,
    state: ApiState,
    fields: Iterable[str],
    limit: int = SMALL_BODY,
    *,
    optional: bool = False,
) -> dict[str, Any]:
    """The request's JSON object, read as it streams (never more than ``limit`` bytes) and
    checked (its encoding, its field names) before anything is done with it. With
    ``optional`` (a route whose fields all are), no body at all is ``{}``: ``curl -X POST``
    sends none."""
    headers = request.headers
    if optional and "content-length" not in headers and "transfer-encoding" not in headers:
        return {}
    length = body_length(request, limit)
    record = exchange(request)
    if length > SMALL_BODY:
        if not state.large_slots.acquire(blocking=False):
            raise ApiError(
                503, "busy", "too many large requests at once; try again", {"Retry-After": "1"}
            )
        record.large = True
    chunks, got = [], 0
    try:
        async for chunk in request.stream():
            got += len(chunk)
            if got > length:  # the parser holds a body to its Content-Length; this is a net
                raise ApiError(413, "too_large", "the body is longer than its Content-Length")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(400, "invalid", "the body ended before its Content-Length") from None
    if got < length:
        raise ApiError(400, "invalid", "the body ended before its Content-Length")
    record.body_read = True
    raw = b"".join(chunks)
    if optional and not raw:
        return {}
    if len(raw) <= INLINE_PARSE_BYTES:  # a thread hop costs more than parsing it here
        return _parse_body(raw, frozenset(fields))
    return await anyio.to_thread.run_sync(_parse_body, raw, frozenset(fields))


def _parse_body(raw: bytes, fields: frozenset[str]) -> dict[str, Any]:
    if not raw.strip():
        raise ValidationError("is empty; send a JSON object", "body")
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValidationError("is not UTF-8 text", "body") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", "body"
        ) from None
    except (ValueError, RecursionError) as exc:
        # Python's own limits on what json.loads builds (integers of over 4,300 digits,
        # nesting too deep) are the input's fault.
        raise ValidationError(f"{exc}", "body") from None
    if not isinstance(body, dict):
        raise ValidationError("must be a JSON object", "body")
    for key, value in body.items():  # a field named as the route names it
        check_text(key, "body")
        check_text(value, key)
    unknown = sorted(set(body) - fields)
    if unknown:
        # A misspelt field ("max_page") is an error, not silently the default.
        raise ValidationError(
            f"unknown field(s) {', '.join(map(repr, unknown))}; "
            f"expected {', '.join(sorted(fields))}",
            "body",
        )
    return body


def one(request: Request, name: str) -> str | None:
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationError("given more than once", name)
    return values[0]


def known(request: Request, *names: str) -> None:
    """Refuse a query parameter the route does not take: a misspelt ``limt`` would silently
    be the default, and an ``offset`` given to history would read the same window forever."""
    for name in request.query_params:
        if name not in names:
            raise ValidationError(f"is not a parameter here (expected: {', '.join(names)})", name)


def flag(request: Request, name: str) -> bool:
    """A yes-or-no query parameter: ``1`` or ``true``, ``0`` or ``false``; absent is no."""
    text = one(request, name)
    if text is None:
        return False
    if text not in _FLAGS:
        raise ValidationError(f"must be 1 or 0 (true or false), got {text[:20]!r}", name)
    return _FLAGS[text]


def whole(request: Request, name: str) -> int | None:
    """A whole number in the query string: digits, with a minus sign or not (its range is
    checked where it is used). Text, not JSON: ``5.0`` is refused here."""
    text = one(request, name)
    if text is None:
        return None
    if not _INTEGER.fullmatch(text):
        raise ValidationError(f"must be a whole number, got {text[:20]!r}", name)
    if len(text.lstrip("-")) > 15:  # out of every range, and int() reads no more than 4300
        raise ValidationError("has too many digits", name)
    return int(text)


def loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


_LIST_KEYS = ("pages", "commits", "turns")


def with_camel_case(body: Any) -> Any:
    """``body`` with a camelCase twin of every snake_case key at its top and in the entries
    of its lists of pages, commits and turns (a page's header is the page's own, untouched):
    the routes that named fields in snake_case keep both names for one release."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for key, value in body.items():
        if "_" in key:
            out.setdefault(_camel(key), value)
        if key in _LIST_KEYS and isinstance(value, list):
            out[key] = [with_camel_case(v) for v in value]
    return out


async def tenant_window(
    memory: Memory,
    read: Callable[..., dict[str, Any]],
    args: tuple[Any, ...],
    field: tuple[str, str],
) -> Response:
    """A window of the tenant's history or turns, read in a worker thread; an error names the
    query's field (``field``: the query's name, then the service's) as the client wrote it."""

    def window() -> dict[str, Any]:
        with field_named(*field):
            return read(*args)

    found = await run(window)
    return json_response(200, with_camel_case({"tenant": memory.tenant, **found}))


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    """A blocking service call (git, indexes, the model) off the event loop."""
    return await anyio.to_thread.run_sync(lambda: fn(*args))


_ERRORS = {
    400: "Bad input: the error names the field as the client wrote it",
    401: "No token, or one that is not valid",
    403: "The body names a tenant the token does not grant",
    404: "No such page, chat, turn or route",
    405: "The route does not take this method (Allow names those it takes)",
    409: "The knowledge base is busy (locked) or the chat is open elsewhere",
    411: "A body without a Content-Length",
    413: "A body larger than the route takes",
    422: "A page or turn was broken by hand",
    429: "Too many chats open",
    502: "The language model failed",
    503: "Too many connections or large requests, or (for /memory/*) the flag is off",
}


def responses(*codes: int, ok: type[Any] | None = None) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorResponse, "description": _ERRORS[code]} for code in codes
    }
    if ok is not None:
        out[200] = {"model": ok, "description": "OK"}
    return out


AUTH = (401, 503)  # every route with a token: refused, or too many connections
GET = (400, 404, 405, *AUTH)
POST = (400, 404, 405, 411, 413, *AUTH)


def body_doc(model: str, required: bool = True) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}},
        },
        "security": [{"bearer": []}],
    }


SECURED: dict[str, Any] = {"security": [{"bearer": []}]}


def ids(text: str) -> str:
    """A path parameter as the client wrote it (see :class:`Guard`)."""
    return unquote(text)


_FLAGS = {"1": True, "true": True, "0": False, "false": False}
_DIGITS = re.compile(r"[0-9]{1,15}")
_INTEGER = re.compile(r"-?[0-9]+")


def state_of(request: Request) -> ApiState:
    found: ApiState = request.app.state.api
    return found


async def memory_of(request: Request) -> Memory:
    """The memory of the tenant whose token the request presents."""
    state = state_of(request)
    return state.memory(tenant_of(state, request))


def query(model: type[BaseModel], *, skip: Iterable[str] = (), **renames: str) -> dict[str, Any]:
    """The OpenAPI ``parameters`` of a route whose query string holds ``model``'s fields (the
    MCP tool's arguments of the same call), named as the route names them (``renames``:
    field -> parameter). The route reads them itself, strictly (see :func:`_one`)."""
    properties = model.model_json_schema()["properties"]
    parameters = []
    for name, schema in properties.items():
        if name in skip:
            continue
        schema = dict(schema)
        schema.pop("default", None)
        schema.pop("title", None)
        description = schema.pop("description", "")
        options = [s for s in schema.pop("anyOf", []) if s.get("type") != "null"]
        if options:
            schema.update(options[0])
        parameters.append(
            {
                "name": renames.get(name, name),
                "in": "query",
                "required": False,
                "description": description,
                "schema": schema,
            }
        )
    return {**SECURED, "parameters": parameters}
