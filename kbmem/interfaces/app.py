"""The HTTP API as a FastAPI app: one tenant's memory for other agents, as JSON over HTTP
(``kbmem serve`` runs it with uvicorn, see :mod:`kbmem.interfaces.server`).

Every request but ``GET /v1/health``, ``/openapi.json`` and ``/metrics`` from loopback
presents ``Authorization: Bearer <token>``; the token (see :mod:`kbmem.interfaces.tokens`)
decides the tenant, so no route takes a tenant and none can reach another tenant's pages. Bad
input is answered with a 4xx status and a JSON body ``{"error": {"code", "message",
"field"}}``; nothing is written before a request has been read and checked whole.

Routes (all JSON)::

    GET    /v1/health
    GET    /v1/pages                  ?at=REV&limit=N&offset=N
    GET    /v1/pages/<page-id>        ?at=REV&raw=1
    GET    /v1/history                ?page=<page-id>&limit=N&before=<commit>
    POST   /v1/search                 {query, tool?, k?}
    POST   /v1/research               {request, max_pages?, depth?, max_tokens?, engine?,
                                       trace?, stream?}
    POST   /v1/sessions               a session in the Summit shape
    POST   /v1/chats                  {chat_id?}
    POST   /v1/chats/<chat-id>/messages {message}
    DELETE /v1/chats/<chat-id>        commit the chat's pending turns and close it
    GET    /v1/turns                  ?chat=<chat-id>&limit=N&offset=N
    GET    /v1/turns/<chat-id>/<n>    the audit of one turn
    POST   /memory/ingest_session     the Summit note's routes, behind MEMORY_GAM_ENABLED
    POST   /memory/build_context
    GET    /metrics                   Prometheus text
    *      /mcp                       the MCP server (Streamable HTTP)

The order of the checks is the old server's, and it matters: the route (404, 405), then the
token (401), then the flag (503), then the query string, and only then the body, read as it
streams against the route's size limit (411, 413). Bodies are parsed here, not by FastAPI:
FastAPI would read the body before any check, and the service layer's own messages ("must be
between 1 and 32") are the contract. The OpenAPI document still names each body's model.

``POST /v1/research`` with ``"stream": true`` answers ``text/event-stream``: a ``trace``
event per research step as it happens, then one ``briefing`` event (or ``error``), each with
an ``id:`` (its sequence number, from 1).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from kbmem.agent.provenance import TurnFormatError
from kbmem.errors import KbmemError, PageFormatError, ValidationError
from kbmem.interfaces import summit
from kbmem.interfaces.limits import MAX_HEAD_BYTES
from kbmem.interfaces.mcp_sdk.http import McpHttp
from kbmem.interfaces.schema import (
    BuildContextRequest,
    ErrorResponse,
    IngestSessionResponse,
    MessageRequest,
    OpenChatRequest,
    ResearchRequest,
    SearchRequest,
    schemas,
)
from kbmem.interfaces.service import SESSION_FIELDS, Memory, check_text, field_named, kbmem_version
from kbmem.interfaces.service import health as service_health
from kbmem.interfaces.summit import FLAG
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase
from kbmem.telemetry import HTTP_LATENCY, HTTP_REQUESTS, metrics_text

log = logging.getLogger(__name__)

SMALL_BODY = 1024 * 1024  # every route's body but a session's
INLINE_PARSE_BYTES = 64 * 1024  # bodies parsed on the event loop; larger ones in a thread
MAX_LARGE_REQUESTS = 2  # sessions over SMALL_BODY read and memorized at once; more get 503
KNOWN_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "DELETE", "PUT", "PATCH"})

ERROR_CODES = {
    400: "invalid",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    422: "unreadable_page",
    429: "too_many",
    502: "llm",
}


class ApiError(Exception):
    """An HTTP-level refusal (no token, unknown route, body too large)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or {}


def error_body(
    code: str, message: str, field: str | None = None, hint: str | None = None
) -> dict[str, Any]:
    error = {"code": code, "message": message, "field": field}
    if hint:
        error["hint"] = hint
    return {"error": error}


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
    headers = request.headers.getlist("authorization")
    if len(headers) > 1:
        # Which one counts would differ between us and a proxy in front.
        raise ApiError(400, "invalid", "send one Authorization header, not several")
    scheme, _, token = (headers[0] if headers else "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "unauthorized",
            "send 'Authorization: Bearer <token>' (create one with 'kbmem token create')",
            {"WWW-Authenticate": "Bearer"},
        )
    tenant = state.tokens.tenant_of(token.strip())
    if tenant is None:
        raise ApiError(
            401, "unauthorized", "the token is not valid", {"WWW-Authenticate": "Bearer"}
        )
    return tenant


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


def _one(request: Request, name: str) -> str | None:
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationError("given more than once", name)
    return values[0]


def _known(request: Request, *names: str) -> None:
    """Refuse a query parameter the route does not take: a misspelt ``limt`` would silently
    be the default, and an ``offset`` given to history would read the same window forever."""
    for name in request.query_params:
        if name not in names:
            raise ValidationError(f"is not a parameter here (expected: {', '.join(names)})", name)


def _flag(request: Request, name: str) -> bool:
    """A yes-or-no query parameter: ``1`` or ``true``, ``0`` or ``false``; absent is no."""
    text = _one(request, name)
    if text is None:
        return False
    if text not in _FLAGS:
        raise ValidationError(f"must be 1 or 0 (true or false), got {text[:20]!r}", name)
    return _FLAGS[text]


def _whole(request: Request, name: str) -> int | None:
    """A whole number in the query string: digits, with a minus sign or not (its range is
    checked where it is used). Text, not JSON: ``5.0`` is refused here."""
    text = _one(request, name)
    if text is None:
        return None
    if not _INTEGER.fullmatch(text):
        raise ValidationError(f"must be a whole number, got {text[:20]!r}", name)
    if len(text.lstrip("-")) > 15:  # out of every range, and int() reads no more than 4300
        raise ValidationError("has too many digits", name)
    return int(text)


def _loopback(host: str) -> bool:
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


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return Response(
        data,
        status,
        {"Cache-Control": "no-store", **(headers or {})},
        media_type="application/json; charset=utf-8",
    )


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


# -- the app -----------------------------------------------------------------------------------

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


def _responses(*codes: int, ok: type[Any] | None = None) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorResponse, "description": _ERRORS[code]} for code in codes
    }
    if ok is not None:
        out[200] = {"model": ok, "description": "OK"}
    return out


_AUTH = (401, 503)  # every route with a token: refused, or too many connections
_GET = (400, 404, 405, *_AUTH)
_POST = (400, 404, 405, 411, 413, *_AUTH)


def _body(model: str, required: bool = True) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}},
        },
        "security": [{"bearer": []}],
    }


_SECURED: dict[str, Any] = {"security": [{"bearer": []}]}


def create_app(state: ApiState, mcp: McpHttp | None = None) -> Guard:
    """The app over ``state``; with ``mcp``, the MCP endpoint mounted at ``/mcp`` (its
    session manager runs inside this app's lifespan)."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if mcp is None:
            yield
            return
        async with mcp.lifespan():
            yield

    app = FastAPI(
        title="kbmem",
        version=kbmem_version(),
        summary="A git-backed memory for AI agents: one tenant's memory per token.",
        lifespan=lifespan,
        docs_url=None,  # the interactive page needs assets from a CDN: see docs/http-api.md
        redoc_url=None,
    )
    app.state.api = state

    async def memory_of(request: Request) -> Memory:
        return state.memory(tenant_of(state, request))

    # -- routes ---------------------------------------------------------------------------

    @app.get("/v1/health", summary="Liveness and version", responses=_responses(503))
    async def health() -> Response:
        return json_response(200, service_health(state.kb))

    @app.get(
        "/v1/pages",
        summary="A window of the tenant's pages",
        responses=_responses(*_GET),
        openapi_extra=_SECURED,
    )
    async def pages(
        request: Request, at: str | None = None, limit: str | None = None, offset: str | None = None
    ) -> Response:
        memory = await memory_of(request)
        _known(request, "at", "limit", "offset")
        args = (_one(request, "at"), _whole(request, "limit"), _whole(request, "offset"))
        listed = await run(memory.list_pages, *args)
        return json_response(200, with_camel_case({"tenant": memory.tenant, **listed}))

    @app.get(
        "/v1/pages/{page_id:path}",
        summary="One page, as stored",
        responses=_responses(*_GET, 422),
        openapi_extra=_SECURED,
    )
    async def page(
        request: Request, page_id: str, at: str | None = None, raw: str | None = None
    ) -> Response:
        memory = await memory_of(request)
        _known(request, "at", "raw")
        page_id = "/".join(ids(p) for p in page_id.split("/") if p)
        try:
            found = await run(memory.page, page_id, _one(request, "at"), _flag(request, "raw"))
        except PageFormatError as exc:
            exc.hint = f"GET /v1/pages/{page_id}?raw=1 gives the page as stored, to repair it"
            raise
        return json_response(200, with_camel_case(found))

    @app.get(
        "/v1/history",
        summary="Commits, newest first",
        responses=_responses(*_GET),
        openapi_extra=_SECURED,
    )
    async def history(
        request: Request,
        page: str | None = None,
        limit: str | None = None,
        before: str | None = None,
    ) -> Response:
        memory = await memory_of(request)
        _known(request, "page", "limit", "before")
        args = (_one(request, "page"), _whole(request, "limit"), _one(request, "before"))
        return await tenant_window(memory, memory.history, args, ("page", "page_id"))

    @app.post(
        "/v1/search",
        summary="Search the tenant's memory",
        responses=_responses(*_POST),
        openapi_extra=_body("SearchRequest"),
    )
    async def search(request: Request) -> Response:
        memory = await memory_of(request)
        body = await json_body(request, state, SearchRequest.model_fields)
        found = await run(memory.search, body.get("query"), body.get("tool"), body.get("k"))
        return json_response(200, found)

    @app.post(
        "/v1/research",
        summary="A cited briefing (server-sent events with stream)",
        responses=_responses(*_POST, 502),
        openapi_extra=_body("ResearchRequest"),
    )
    async def research(request: Request) -> Response:
        memory = await memory_of(request)
        body = await json_body(request, state, ResearchRequest.model_fields)
        for flag in ("trace", "stream"):
            if not isinstance(body.get(flag, False), bool):
                raise ValidationError("must be true or false", flag)
        call = await run(
            lambda: memory.research_call(
                body.get("request"),
                max_pages=body.get("max_pages"),
                depth=body.get("depth"),
                max_tokens=body.get("max_tokens"),
                engine=body.get("engine"),
                time_budget_s=body.get("time_budget_s"),
            )
        )
        if body.get("stream"):
            return StreamingResponse(
                stream_research(call),
                media_type="text/event-stream; charset=utf-8",
                headers={"Cache-Control": "no-store"},
            )
        briefing = await run(call, None)
        return json_response(200, briefing.to_dict(with_trace=bool(body.get("trace"))))

    @app.post(
        "/v1/sessions",
        summary="Memorize a session",
        status_code=201,
        responses=_responses(*_POST, 409),
        openapi_extra=_body("SummitSession"),
    )
    async def sessions(request: Request) -> Response:
        memory = await memory_of(request)
        body = await json_body(request, state, SESSION_FIELDS, state.max_body)
        result = await run(memory.ingest, body)
        return json_response(201 if result["status"] == "created" else 200, result)

    @app.post(
        "/v1/chats",
        summary="Open a chat",
        status_code=201,
        responses=_responses(*_POST, 409, 429),
        openapi_extra=_body("OpenChatRequest", required=False),
    )
    async def open_chat(request: Request) -> Response:
        memory = await memory_of(request)
        body = await json_body(request, state, OpenChatRequest.model_fields, optional=True)
        chat_id, opened = await run(memory.open_chat, body.get("chat_id"))
        return json_response(201 if opened else 200, with_camel_case({"chat_id": chat_id}))

    @app.delete(
        "/v1/chats/{chat_id}",
        summary="Commit and close a chat",
        responses=_responses(*_GET, 409),
        openapi_extra=_SECURED,
    )
    async def close_chat(request: Request, chat_id: str) -> Response:
        memory = await memory_of(request)
        closed = await run(memory.close_chat, ids(chat_id))
        return json_response(200, with_camel_case(closed))

    @app.post(
        "/v1/chats/{chat_id}/messages",
        summary="One chat turn",
        responses=_responses(*_POST, 409, 502),
        openapi_extra=_body("MessageRequest"),
    )
    async def send(request: Request, chat_id: str) -> Response:
        memory = await memory_of(request)
        body = await json_body(request, state, MessageRequest.model_fields)
        reply = await run(memory.send, ids(chat_id), body.get("message"))
        return json_response(200, with_camel_case(reply))

    @app.get(
        "/v1/turns",
        summary="A window of chat turns",
        responses=_responses(*_GET),
        openapi_extra=_SECURED,
    )
    async def turns(
        request: Request,
        chat: str | None = None,
        limit: str | None = None,
        offset: str | None = None,
    ) -> Response:
        memory = await memory_of(request)
        _known(request, "chat", "limit", "offset")
        args = (_one(request, "chat"), _whole(request, "limit"), _whole(request, "offset"))
        return await tenant_window(memory, memory.list_turns, args, ("chat", "chat_id"))

    @app.get(
        "/v1/turns/{chat_id}/{n}",
        summary="The audit of one turn",
        responses=_responses(*_GET, 422),
        openapi_extra=_SECURED,
    )
    async def audit(request: Request, chat_id: str, n: str) -> Response:
        memory = await memory_of(request)
        return json_response(200, await run(memory.audit, f"{ids(chat_id)}/{ids(n)}"))

    # -- the Summit routes, metrics ----------------------------------------------------------

    def gam_flag() -> None:
        if not state.gam_enabled:
            raise ApiError(
                503, "disabled", f"the GAM routes are off; set {FLAG}=true to turn them on"
            )

    @app.post(
        "/memory/ingest_session",
        summary="Memorize a session (Summit; needs MEMORY_GAM_ENABLED)",
        responses=_responses(*_POST, 409, ok=IngestSessionResponse),
        openapi_extra=_body("SummitSession"),
    )
    async def ingest_session(request: Request) -> Response:
        memory = await memory_of(request)
        gam_flag()
        body = await json_body(request, state, SESSION_FIELDS | {"description"}, state.max_body)
        return json_response(200, await run(summit.ingest_session, memory, body))

    @app.post(
        "/memory/build_context",
        summary="A BriefingContext (Summit; needs MEMORY_GAM_ENABLED)",
        responses=_responses(*_POST, 403, 502),
        openapi_extra=_body("BuildContextRequest"),
    )
    async def build_context(request: Request) -> Response:
        memory = await memory_of(request)
        gam_flag()
        body = await json_body(request, state, BuildContextRequest.model_fields)
        return json_response(200, await run(summit.build_context, memory, body))

    @app.get(
        "/metrics",
        summary="Prometheus metrics (open on loopback, else with a token)",
        responses=_responses(401, 503),
    )
    async def metrics(request: Request) -> Response:
        client = request.client.host if request.client else ""
        if not _loopback(client):
            tenant_of(state, request)
        return Response(
            metrics_text(), 200, {"Cache-Control": "no-store"}, media_type=CONTENT_TYPE_LATEST
        )

    if mcp is not None:
        # A route, not a mount: a mount answers "/mcp" with a redirect to "/mcp/".
        # Starlette takes an ASGI app as a route's endpoint; its type says only functions.
        app.add_route("/mcp", mcp, include_in_schema=False)  # type: ignore[arg-type]

    # -- errors ---------------------------------------------------------------------------

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return json_response(exc.status, error_body(exc.code, str(exc)), exc.headers)

    @app.exception_handler(KbmemError)
    async def kbmem_error(request: Request, exc: KbmemError) -> Response:
        return json_response(exc.http_status, error_of(exc))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> Response:
        log.error("internal error in %s %s", request.method, request.url.path, exc_info=exc)
        return json_response(500, error_body("internal", "internal error; see the server's log"))

    async def stream_research(call: Callable[[Any], Any]) -> AsyncIterator[bytes]:
        """Server-sent events: the trace as it happens, then the briefing. The arguments were
        checked before (a bad request still gets a 4xx); a failure after the stream began is
        its last event, ``error``. A client that goes away stops the writing, not the
        research (its pages and index are left as a finished research leaves them)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()

        def put(item: tuple[str, Any] | None) -> None:
            # The server may have stopped meanwhile: the research ends, its events go nowhere.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                briefing = call(lambda event: put(("trace", event.to_dict())))
                put(("briefing", briefing.to_dict()))
            except KbmemError as exc:
                put(("error", error_of(exc)))
            except Exception:
                log.exception("internal error in a streamed research")
                put(("error", error_body("internal", "internal error; see the server's log")))
            finally:
                put(None)

        worker = threading.Thread(target=work, name="kbmem-research-stream", daemon=True)
        worker.start()
        sequence = 0
        while (item := await queue.get()) is not None:
            sequence += 1
            kind, data = item
            text = json.dumps(data, ensure_ascii=False)
            yield f"id: {sequence}\nevent: {kind}\ndata: {text}\n\n".encode()

    original_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        """FastAPI's document, with the request bodies' models (the routes read their bodies
        themselves), the bearer scheme, and without FastAPI's 422: this API answers bad input
        with 400 (the validation handler below)."""
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = original_openapi()
        components = doc.setdefault("components", {})
        found = components.setdefault("schemas", {})
        for name, schema in schemas().items():
            found.setdefault(name, schema)
        for name in ("HTTPValidationError", "ValidationError"):
            found.pop(name, None)
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        for operations in doc.get("paths", {}).values():
            for operation in operations.values():
                responses = operation.get("responses", {})
                if responses.get("422", {}).get("description") == "Validation Error":
                    del responses["422"]
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        # The 400 contract, not FastAPI's 422: the first error, its field as the client wrote it.
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid"}
        loc = [p for p in first.get("loc", ()) if p not in ("body", "query", "path")]
        name = ".".join(str(p) for p in loc) or "body"
        return json_response(400, error_body("invalid", str(first.get("msg", "")).lower(), name))

    return Guard(app)


# -- the guard: what every request passes before routing --------------------------------------


class Guard:
    """The outermost layer: an unknown method is 501, ``OPTIONS`` is answered from the routes
    (204 with ``Allow``, no token needed: the methods are no secret), a path no route has is
    404 and a method its route does not take 405 (with ``Allow``); each request is counted and
    timed by route; a response that leaves the client's body unread closes the connection
    (what follows on it cannot be trusted); the request line is logged without its query
    string, where a client may have put a token."""

    def __init__(self, app: FastAPI):
        self.app = app
        self.state: ApiState = app.state.api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method: str = scope["method"]
        # Routed on the path's parts, each decoded alone: an id's "%2F" is part of the id
        # ("..%2Fx" is one chat id, refused as such), not a folder of the path.
        raw = scope.get("raw_path") or scope["path"].encode()
        if raw != b"*":
            parts = raw.decode("latin-1").split("/")
            scope["path"] = "/".join(_escape_slash(unquote(part)) for part in parts)
        headers = dict(scope["headers"])
        record = Exchange(
            body_read=headers.get(b"content-length", b"0").strip() in (b"0", b"")
            and b"transfer-encoding" not in headers
        )
        scope["kbmem.exchange"] = record
        started = time.perf_counter()

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                client = scope.get("client") or ("-", 0)
                log.info("%s %s %s %s", client[0], method, scope.get("path", ""), record.status)
                if not record.body_read:
                    message = dict(message)
                    message["headers"] = [*message.get("headers", []), (b"connection", b"close")]
            await send(message)

        try:
            await self._answer(scope, receive, guarded_send, method, record)
        finally:
            if record.large:
                self.state.large_slots.release()
            HTTP_REQUESTS.labels(record.route, method, str(record.status)).inc()
            HTTP_LATENCY.labels(record.route, method).observe(
                (time.perf_counter() - started) * 1000
            )

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, method: str, record: Exchange
    ) -> None:
        path: str = scope["path"]
        target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        if target > MAX_HEAD_BYTES:  # the parser takes a longer line when it comes whole
            await _send_json(send, 414, error_body("http", "the request's URL is too long"))
            return
        if sum(len(k) + len(v) + 4 for k, v in scope["headers"]) > MAX_HEAD_BYTES:
            await _send_json(send, 431, error_body("http", "the request's headers are too long"))
            return
        if method not in KNOWN_METHODS:
            await _send_json(send, 501, error_body("http", f"Unsupported method ({method!r})"))
            return
        if path == "/mcp":
            # The SDK reads the body whole: its size is checked first, as for /v1.
            record.route, record.body_read = "/mcp", True
            length = dict(scope["headers"]).get(b"content-length", b"0").strip()
            if not length.isdigit() or int(length) > self.state.max_body:
                message = f"send a body with a Content-Length of at most {self.state.max_body}"
                await _send_json(send, 413, error_body("too_large", message))
                return
            await self.app(scope, receive, send)
            return
        if method == "OPTIONS" and path == "*":
            methods = {m for route in self._routes for m in route[1]}
            await _send_empty(send, 204, {"Allow": _allow(methods)})
            return
        matched = self._methods_of(scope)
        if matched is None:
            message = (
                "name a turn as /v1/turns/<chat-id>/<n>"
                if path.startswith("/v1/turns/")
                else f"no such route: {path}"
            )
            await _send_json(send, 404, error_body("not_found", message))
            return
        record.route, methods = matched
        if method == "OPTIONS":
            await _send_empty(send, 204, {"Allow": _allow(methods)})
            return
        if ("GET" if method == "HEAD" else method) not in methods:
            await _send_json(
                send,
                405,
                error_body("method_not_allowed", f"{method} is not allowed here"),
                {"Allow": _allow(methods)},
            )
            return
        if method == "HEAD":  # as GET; the server sends the headers without the body
            scope = {**scope, "method": "GET"}
        await self.app(scope, receive, send)

    @functools.cached_property
    def _routes(self) -> list[tuple[Any, set[str]]]:
        """The app's routes and their methods, listed once: they do not change after start."""
        return [
            (route, set(route.methods))  # type: ignore[attr-defined]
            for route in self.app.router.routes
            if getattr(route, "methods", None)  # not the /mcp mount
        ]

    def _methods_of(self, scope: Scope) -> tuple[str, set[str]] | None:
        """The route's label and the methods of the first route whose path matches."""
        probe = {**scope, "method": "GET"}
        for route, methods in self._routes:
            match, _ = route.matches(probe)
            if match is not Match.NONE:
                return route.path_format, {m for m in methods if m != "HEAD"}
        return None


def _escape_slash(part: str) -> str:
    return part.replace("%", "%25").replace("/", "%2F")


def ids(text: str) -> str:
    """A path parameter as the client wrote it (see :class:`Guard`)."""
    return unquote(text)


def _allow(methods: Iterable[str]) -> str:
    """The ``Allow`` header of a route with ``methods``: HEAD goes with GET, and OPTIONS is
    answered everywhere."""
    allowed = set(methods) | {"OPTIONS"}
    if "GET" in allowed:
        allowed.add("HEAD")
    return ", ".join(sorted(allowed))


async def _send_json(
    send: Send, status: int, body: Any, headers: dict[str, str] | None = None
) -> None:
    response = json_response(status, body, headers)
    await _send_raw(send, response)


async def _send_empty(send: Send, status: int, headers: dict[str, str]) -> None:
    await _send_raw(send, Response(None, status, {"Cache-Control": "no-store", **headers}))


async def _send_raw(send: Send, response: Response) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": response.raw_headers,
        }
    )
    await send({"type": "http.response.body", "body": response.body})


_FLAGS = {"1": True, "true": True, "0": False, "false": False}
_DIGITS = re.compile(r"[0-9]{1,15}")
_INTEGER = re.compile(r"-?[0-9]+")
