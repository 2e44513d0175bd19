"""The HTTP API: one tenant's memory for other agents, as JSON over HTTP (``kbmem serve``).

Every request but ``GET /v1/health`` presents ``Authorization: Bearer <token>``; the token
(see :mod:`kbmem.interfaces.tokens`) decides the tenant, so no route takes a tenant and none
can reach another tenant's pages. Bad input is answered with a 4xx status and a JSON body
``{"error": {"code", "message", "field"}}``; nothing is written before a request has been
read and checked whole.

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

Lists come a window at a time, as in the MCP server (:func:`kbmem.interfaces.service.window`).
Every GET route answers HEAD too (the same status and headers, no body), and every route OPTIONS
(204 with ``Allow``, no token needed: the methods are no secret, a 405 names them as well).

``POST /v1/research`` with ``"stream": true`` answers ``text/event-stream``: a ``trace``
event per research step as it happens, then one ``briefing`` event (or ``error``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST

from kbmem.agent.provenance import TurnFormatError
from kbmem.errors import KbmemError, PageFormatError, ValidationError
from kbmem.interfaces import summit
from kbmem.interfaces.openapi import openapi_document
from kbmem.interfaces.schema import (
    BuildContextRequest,
    MessageRequest,
    OpenChatRequest,
    ResearchRequest,
    SearchRequest,
)
from kbmem.interfaces.service import (
    CHAT_IDLE_SECONDS,
    SESSION_FIELDS,
    Memory,
    check_text,
    close_idle_chats_until,
    field_named,
    health,
    kbmem_version,
    recover_chats,
)
from kbmem.interfaces.summit import FLAG, gam_enabled
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase
from kbmem.telemetry import HTTP_LATENCY, HTTP_REQUESTS, metrics_text

log = logging.getLogger(__name__)

SMALL_BODY = 1024 * 1024  # every route's body but a session's
SOCKET_TIMEOUT_S = 30.0  # a client that stops sending mid-request is dropped


class ApiError(Exception):
    """An HTTP-level refusal (no token, unknown route, body too large)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or {}


ERROR_CODES = {
    400: "invalid",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    422: "unreadable_page",
    429: "too_many",
    502: "llm",
}


def error_body(
    code: str, message: str, field: str | None = None, hint: str | None = None
) -> dict[str, Any]:
    error = {"code": code, "message": message, "field": field}
    if hint:
        error["hint"] = hint
    return {"error": error}


class MemoryServer(ThreadingHTTPServer):
    """The server: one :class:`Memory` per tenant, opened on first use and closed (pending
    chat turns committed) at :meth:`close_memories`."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # socketserver's 5 reset bursts of concurrent clients
    max_connections = 64  # one thread each; beyond this a client is turned away with 503
    socket_timeout = SOCKET_TIMEOUT_S

    def __init__(
        self,
        address: tuple[str, int],
        kb: KnowledgeBase,
        model: str | None = None,
        chat_idle_seconds: float = CHAT_IDLE_SECONDS,
    ):
        # Set before binding: a bind that fails (the port in use) calls server_close.
        self._memories: dict[str, Memory] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if ":" in address[0]:  # an IPv6 address ('::1'); the base class binds IPv4 only
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.kb = kb
        self.model = model
        self.tokens = TokenStore(kb.state_dir)
        self.gam_enabled = gam_enabled(kb)  # read once: `kbmem serve` says which way it is
        # Room for the largest session the memorizer takes, as JSON (escapes can double it).
        max_session = int(kb.settings.section("memorizer")["max_session_bytes"])
        self.max_body = 2 * max_session + 1024 * 1024
        self.chat_idle_seconds = chat_idle_seconds
        self._slots = threading.BoundedSemaphore(self.max_connections)
        recover_chats(kb)
        self._reaper = threading.Thread(
            target=close_idle_chats_until,
            args=(self._stop, self._open_memories, chat_idle_seconds),
            name="kbmem-idle-chats",
            daemon=True,
        )
        self._reaper.start()

    @property
    def url(self) -> str:
        address, port = self.server_address[:2]
        host = address.decode() if isinstance(address, bytes) else address
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def memory(self, tenant: str) -> Memory:
        with self._lock:
            if tenant not in self._memories:
                self._memories[tenant] = Memory(self.kb, tenant, self.model)
            return self._memories[tenant]

    def _open_memories(self) -> list[Memory]:
        with self._lock:
            return list(self._memories.values())

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                body = json.dumps(error_body("busy", "too many connections; try again")).encode()
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    b"Retry-After: 1\r\nConnection: close\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def close_memories(self) -> None:
        """Commit every tenant's open chats; one that cannot (the knowledge base stayed
        locked) keeps its turns in the journal, and the others are still tried."""
        self._stop.set()
        with self._lock:
            memories = list(self._memories.values())
            self._memories.clear()
        for memory in memories:
            try:
                memory.close()
            except KbmemError as exc:
                log.warning("chats of tenant %s not committed yet: %s", memory.tenant, exc)

    def server_close(self) -> None:
        self.close_memories()
        super().server_close()


# A route's handler: given the tenant's memory (None for /v1/health), the ids its path pattern
# matched and the query string, it returns the status and the JSON body (None: it answered).
Route = Callable[["Handler", Any, list[str], dict[str, list[str]]], Any]


class Handler(BaseHTTPRequestHandler):
    server: MemoryServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm the second waits for the
    # client's delayed ACK of the first: 40 ms added to every small answer (bench api).
    disable_nagle_algorithm = True
    _body_read = True
    _streaming = False
    _status = 0
    _route_label = "unmatched"

    def setup(self) -> None:
        # The server's, not the class's: a test's server drops idle clients sooner.
        self.timeout = self.server.socket_timeout  # type: ignore[misc]
        super().setup()

    def version_string(self) -> str:
        return f"kbmem/{kbmem_version()}"

    # -- plumbing -----------------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        # The request line only, never headers; and without its query string, where a
        # client may have put a token (refused, but it must not reach the log either).
        log.info("%s %s", self.address_string(), _QUERY.sub("?...", format % args))

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_OPTIONS(self) -> None:
        self._dispatch("OPTIONS")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The base class's own refusals (a URL or header too long, an unknown method, a
        malformed request line) as JSON too, like every other error here."""
        self._body_read = False  # whatever follows on this connection cannot be trusted
        self.close_connection = True
        text = message or self.responses.get(code, ("error",))[0]
        with contextlib.suppress(OSError):
            self._send_json(code, error_body("http", text))

    def handle_expect_100(self) -> bool:
        """``Expect: 100-continue`` asks whether to send the body: only to a client with a
        valid token and a body of an acceptable size."""
        if self.command == "OPTIONS":  # answered at once, its body unread
            return True
        try:
            self._route(self.command, self._parts())
            self._tenant()
            self._length(self.server.max_body)
        except ApiError as exc:
            self._body_read = False
            self._send_json(exc.status, error_body(exc.code, str(exc)), exc.headers)
            self.close_connection = True
            return False
        return super().handle_expect_100()

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if not self._body_read:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":  # HEAD: the headers GET would send, Content-Length too
            self.wfile.write(data)

    def _parts(self) -> list[str] | None:
        """The path's parts (None for the path ``*`` or a URL that is no path)."""
        path = urlsplit(self.path).path
        if not path.startswith("/"):
            return None
        return [unquote(p) for p in path.split("/") if p]

    def send_response(self, code: int, message: str | None = None) -> None:
        self._status = code  # for the request metrics
        super().send_response(code, message)

    def _dispatch(self, method: str) -> None:
        # A body this request leaves unread would be taken for the next request on the
        # connection: json_body marks it read; otherwise the connection is closed after.
        lengths = self.headers.get_all("Content-Length") or ["0"]
        self._body_read = lengths == ["0"] and not self.headers.get("Transfer-Encoding")
        self._streaming = False
        self._status = 0
        self._route_label = "unmatched"
        started = time.perf_counter()
        try:
            try:
                self._answer(method)
            except ApiError as exc:
                self._refuse(exc.status, error_body(exc.code, str(exc)), exc.headers)
            except KbmemError as exc:
                self._refuse(exc.http_status, self._error_of(exc))
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                raise
            except (ValueError, RecursionError) as exc:
                # Python's own limits on what json.loads builds (integers of over 4,300
                # digits, nesting too deep) are the input's fault.
                self._refuse(400, error_body("invalid", f"body: {exc}", "body"))
            except Exception:
                log.exception("internal error in %s %s", method, self.path)
                self._refuse(500, error_body("internal", "internal error; see the server's log"))
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            log.info("client went away during %s %s", method, self.path)
            self.close_connection = True
        finally:
            if not self._body_read:
                self.close_connection = True
            HTTP_REQUESTS.labels(self._route_label, method, str(self._status)).inc()
            HTTP_LATENCY.labels(self._route_label, method).observe(
                (time.perf_counter() - started) * 1000
            )

    def _answer(self, method: str) -> None:
        if method == "OPTIONS":
            self._options()
            return
        query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        route, ids = self._route(method, self._parts())
        # Routes without a token: a liveness probe has none, and the OpenAPI document
        # describes only what every client may know. /metrics checks its own rule.
        memory = None if route in _OPEN_ROUTES else self.server.memory(self._tenant())
        if route in _SUMMIT_ROUTES and not self.server.gam_enabled:
            raise ApiError(
                503,
                "disabled",
                f"the GAM routes are off; set {FLAG}=true to turn them on",
            )
        status, body = route(self, memory, ids, query)
        if body is not None:
            self._send_json(status, _with_camel_case(body) if route in _ALIASED else body)

    def _options(self) -> None:
        """204 with the methods of the route (``OPTIONS *``: of the server)."""
        if self.path == "*":
            methods = {m for _, by_method in ROUTES for m in by_method}
        else:
            found = _methods_of(self._parts())
            if found is None:
                raise ApiError(404, "not_found", f"no such route: {self.path.split('?')[0]}")
            methods = found
        self.send_response(204)
        self.send_header("Allow", _allow(methods))
        self.send_header("Cache-Control", "no-store")
        if not self._body_read:
            self.send_header("Connection", "close")
        self.end_headers()

    def _refuse(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        if self._streaming:  # the stream has begun: its own error event said what happened
            self.close_connection = True
            return
        self._send_json(status, body, headers)

    @staticmethod
    def _error_of(exc: KbmemError) -> dict[str, Any]:
        """A KbmemError as the client sees it. A server-side failure (storage, a damaged
        token file) is logged in full and answered without its details: they name files on
        the server, and the client can do nothing about them."""
        status = exc.http_status
        if status >= 500 and status != 502:
            log.error("%s: %s", type(exc).__name__, exc)
            return error_body("internal", "the server could not do this; see its log")
        field = getattr(exc, "field", None)
        message = (getattr(exc, "problem", None) if field else None) or str(exc)
        code = "unreadable_turn" if isinstance(exc, TurnFormatError) else None
        return error_body(code or ERROR_CODES.get(status, "error"), message, field, exc.hint)

    def _route(self, method: str, parts: list[str] | None) -> tuple[Route, list[str]]:
        """The route for ``method`` on ``parts`` (the path after ``/v1``) and the ids its
        pattern matched; 404 for a path no route has, 405 for a method it does not take."""
        for pattern, by_method in ROUTES if parts is not None else ():
            ids = _match(pattern, parts or [])
            if ids is None:
                continue
            self._route_label = _label(pattern)
            route = by_method.get("GET" if method == "HEAD" else method)
            if route is None:
                raise ApiError(
                    405,
                    "method_not_allowed",
                    f"{method} is not allowed here",
                    {"Allow": _allow(by_method)},
                )
            return route, ids
        if parts and parts[:2] == ["v1", "turns"]:
            raise ApiError(404, "not_found", "name a turn as /v1/turns/<chat-id>/<n>")
        raise ApiError(404, "not_found", f"no such route: {self.path.split('?')[0]}")

    def _tenant(self) -> str:
        if len(self.headers.get_all("Authorization") or []) > 1:
            # Which one counts would differ between us and a proxy in front.
            raise ApiError(400, "invalid", "send one Authorization header, not several")
        header = self.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(
                401,
                "unauthorized",
                "send 'Authorization: Bearer <token>' (create one with 'kbmem token create')",
                {"WWW-Authenticate": "Bearer"},
            )
        tenant = self.server.tokens.tenant_of(token.strip())
        if tenant is None:
            raise ApiError(
                401, "unauthorized", "the token is not valid", {"WWW-Authenticate": "Bearer"}
            )
        return tenant

    def _length(self, limit: int) -> int:
        """The body's length, from exactly one plain Content-Length: anything looser
        (``+17``, two lengths, chunked) is refused, since a proxy in front may read it
        otherwise."""
        if self.headers.get("Transfer-Encoding"):
            raise ApiError(411, "length_required", "send the body with a Content-Length")
        lengths = self.headers.get_all("Content-Length") or []
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

    def json_body(
        self, fields: frozenset[str] | set[str], limit: int = SMALL_BODY, *, optional: bool = False
    ) -> dict[str, Any]:
        """The request's JSON object, read whole and checked (its size, its encoding, its
        field names) before anything is done with it. With ``optional`` (a route whose fields
        all are), no body at all is ``{}``: ``curl -X POST`` sends none."""
        headers = self.headers
        if (
            optional
            and not headers.get_all("Content-Length")
            and not headers.get("Transfer-Encoding")
        ):
            return {}
        length = self._length(limit)
        raw = self.rfile.read(length)
        if len(raw) < length:
            raise ApiError(400, "invalid", "the body ended before its Content-Length")
        self._body_read = True
        if optional and not raw:
            return {}
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
        if not isinstance(body, dict):
            raise ValidationError("must be a JSON object", "body")
        for key, value in body.items():  # a field named as the route names it
            check_text(key, "body")
            check_text(value, key)
        unknown = sorted(set(body) - set(fields))
        if unknown:
            # A misspelt field ("max_page") is an error, not silently the default.
            raise ValidationError(
                f"unknown field(s) {', '.join(map(repr, unknown))}; "
                f"expected {', '.join(sorted(fields))}",
                "body",
            )
        return body

    # -- routes -------------------------------------------------------------------------------
    # Each takes the ids its path pattern matched (see ROUTES) and the query string.

    def health(self, memory: None, ids: list[str], query: dict[str, list[str]]) -> Any:
        return 200, health(self.server.kb)

    def pages(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        _known(query, "at", "limit", "offset")
        pages = memory.list_pages(
            _one(query, "at"), _whole(query, "limit"), _whole(query, "offset")
        )
        return 200, {"tenant": memory.tenant, **pages}

    def page(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        _known(query, "at", "raw")
        page_id = "/".join(ids)
        try:
            return 200, memory.page(page_id, _one(query, "at"), _flag(query, "raw"))
        except PageFormatError as exc:
            exc.hint = f"GET /v1/pages/{page_id}?raw=1 gives the page as stored, to repair it"
            raise

    def history(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        _known(query, "page", "limit", "before")
        limit = _whole(query, "limit")
        with field_named("page", "page_id"):
            history = memory.history(_one(query, "page"), limit, _one(query, "before"))
        return 200, {"tenant": memory.tenant, **history}

    def search(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        body = self.json_body(set(SearchRequest.model_fields))
        return 200, memory.search(body.get("query"), body.get("tool"), body.get("k"))

    def research(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        body = self.json_body(set(ResearchRequest.model_fields))
        for flag in ("trace", "stream"):
            if not isinstance(body.get(flag, False), bool):
                raise ValidationError("must be true or false", flag)
        call = memory.research_call(
            body.get("request"),
            max_pages=body.get("max_pages"),
            depth=body.get("depth"),
            max_tokens=body.get("max_tokens"),
            engine=body.get("engine"),
        )
        if not body.get("stream"):
            return 200, call(None).to_dict(with_trace=bool(body.get("trace")))
        self._stream_research(call)
        return 200, None

    def _stream_research(self, call: Callable[[Any], Any]) -> None:
        """Server-sent events: the trace as it happens, then the briefing. The arguments were
        checked before (a bad request still gets a 4xx); a failure after the stream began is
        its last event, ``error``."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self._streaming = True
        lock = threading.Lock()
        gone = threading.Event()

        def emit(kind: str, data: Any) -> None:
            # Trace events come from the research's search threads too: one write at a time.
            # A client that went away stops the writing, not the research.
            payload = f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
            with lock:
                if gone.is_set():
                    return
                try:
                    self.wfile.write(payload.encode())
                    self.wfile.flush()
                except OSError:
                    gone.set()

        try:
            briefing = call(lambda event: emit("trace", event.to_dict()))
        except KbmemError as exc:
            emit("error", self._error_of(exc))
            return
        except Exception:
            log.exception("internal error in a streamed research")
            emit("error", error_body("internal", "internal error; see the server's log"))
            return
        emit("briefing", briefing.to_dict())

    def sessions(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        body = self.json_body(SESSION_FIELDS, self.server.max_body)
        result = memory.ingest(body)
        return (201 if result["status"] == "created" else 200), result

    def open_chat(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        body = self.json_body(set(OpenChatRequest.model_fields), optional=True)
        chat_id, opened = memory.open_chat(body.get("chat_id"))
        return (201 if opened else 200), {"chat_id": chat_id}

    def send(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        body = self.json_body(set(MessageRequest.model_fields))
        return 200, memory.send(ids[0], body.get("message"))

    def close_chat(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        return 200, memory.close_chat(ids[0])

    def turns(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        _known(query, "chat", "limit", "offset")
        limit, offset = _whole(query, "limit"), _whole(query, "offset")
        with field_named("chat", "chat_id"):
            turns = memory.list_turns(_one(query, "chat"), limit, offset)
        return 200, {"tenant": memory.tenant, **turns}

    def audit(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        return 200, memory.audit("/".join(ids))

    # -- the Summit routes, metrics, the API's description ------------------------------------

    def ingest_session(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        body = self.json_body(SESSION_FIELDS | {"description"}, self.server.max_body)
        return 200, summit.ingest_session(memory, body)

    def build_context(self, memory: Memory, ids: list[str], query: dict[str, list[str]]) -> Any:
        body = self.json_body(set(BuildContextRequest.model_fields))
        return 200, summit.build_context(memory, body)

    def metrics(self, memory: None, ids: list[str], query: dict[str, list[str]]) -> Any:
        """Prometheus text. Open to clients on the loopback interface (a scraper beside the
        server); from anywhere else, only with a valid token."""
        if not _loopback(self.client_address[0]):
            self._tenant()
        data = metrics_text()
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        if not self._body_read:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return 200, None

    def openapi(self, memory: None, ids: list[str], query: dict[str, list[str]]) -> Any:
        return 200, openapi_document(kbmem_version())


# Path patterns after /v1 ("*" one part, "**" one or more), each with its methods; the first
# that matches a path is its route. HEAD is answered as GET, OPTIONS for every route.
ROUTES: tuple[tuple[tuple[str, ...], dict[str, Route]], ...] = (
    (("v1", "health"), {"GET": Handler.health}),
    (("v1", "pages"), {"GET": Handler.pages}),
    (("v1", "pages", "**"), {"GET": Handler.page}),
    (("v1", "history"), {"GET": Handler.history}),
    (("v1", "search"), {"POST": Handler.search}),
    (("v1", "research"), {"POST": Handler.research}),
    (("v1", "sessions"), {"POST": Handler.sessions}),
    (("v1", "chats"), {"POST": Handler.open_chat}),
    (("v1", "chats", "*"), {"DELETE": Handler.close_chat}),
    (("v1", "chats", "*", "messages"), {"POST": Handler.send}),
    (("v1", "turns"), {"GET": Handler.turns}),
    (("v1", "turns", "*", "*"), {"GET": Handler.audit}),
    (("memory", "ingest_session"), {"POST": Handler.ingest_session}),
    (("memory", "build_context"), {"POST": Handler.build_context}),
    (("metrics",), {"GET": Handler.metrics}),
    (("openapi.json",), {"GET": Handler.openapi}),
)
_OPEN_ROUTES = (Handler.health, Handler.metrics, Handler.openapi)
_SUMMIT_ROUTES = (Handler.ingest_session, Handler.build_context)
# Routes whose answers name fields in snake_case, as they did before the one naming
# convention (camelCase): both names, for one release (docs/http-api.md).
_ALIASED = (
    Handler.pages,
    Handler.page,
    Handler.history,
    Handler.open_chat,
    Handler.send,
    Handler.close_chat,
    Handler.turns,
)
_LIST_KEYS = ("pages", "commits", "turns")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _with_camel_case(body: Any) -> Any:
    """``body`` with a camelCase twin of every snake_case key at its top and in the entries
    of its lists of pages, commits and turns (a page's header is the page's own, untouched)."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for key, value in body.items():
        if "_" in key:
            out.setdefault(_camel(key), value)
        if key in _LIST_KEYS and isinstance(value, list):
            out[key] = [_with_camel_case(v) for v in value]
    return out


def _label(pattern: tuple[str, ...]) -> str:
    """A route's pattern as its metric label (``/v1/turns/{id}/{id}``)."""
    return "/" + "/".join("{id}" if p in ("*", "**") else p for p in pattern)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationError("given more than once", name)
    return values[0]


def _known(query: dict[str, list[str]], *names: str) -> None:
    """Refuse a query parameter the route does not take: a misspelt ``limt`` would silently
    be the default, and an ``offset`` given to history would read the same window forever."""
    for name in query:
        if name not in names:
            raise ValidationError(f"is not a parameter here (expected: {', '.join(names)})", name)


def _flag(query: dict[str, list[str]], name: str) -> bool:
    """A yes-or-no query parameter: ``1`` or ``true``, ``0`` or ``false``; absent is no."""
    text = _one(query, name)
    if text is None:
        return False
    if text not in _FLAGS:
        raise ValidationError(f"must be 1 or 0 (true or false), got {text[:20]!r}", name)
    return _FLAGS[text]


def _whole(query: dict[str, list[str]], name: str) -> int | None:
    """A whole number in the query string: digits, with a minus sign or not (its range is
    checked where it is used). Text, not JSON: ``5.0`` is refused here."""
    text = _one(query, name)
    if text is None:
        return None
    if not _INTEGER.fullmatch(text):
        raise ValidationError(f"must be a whole number, got {text[:20]!r}", name)
    if len(text.lstrip("-")) > 15:  # out of every range, and int() reads no more than 4300
        raise ValidationError("has too many digits", name)
    return int(text)


def _match(pattern: tuple[str, ...], parts: list[str]) -> list[str] | None:
    """The ids ``parts`` holds where ``pattern`` has ``*`` (one part) or ends in ``**`` (one
    or more, for a page id with folders in it); None when it does not match."""
    rest = pattern[-1:] == ("**",)
    fixed = pattern[:-1] if rest else pattern
    if len(parts) < len(fixed) + rest or (not rest and len(parts) != len(fixed)):
        return None
    ids = []
    for want, got in zip(fixed, parts, strict=False):
        if want == "*":
            ids.append(got)
        elif want != got:
            return None
    return ids + parts[len(fixed) :] if rest else ids


def _methods_of(parts: list[str] | None) -> set[str] | None:
    for pattern, by_method in ROUTES if parts is not None else ():
        if _match(pattern, parts or []) is not None:
            return set(by_method)
    return None


def _allow(methods: Iterable[str]) -> str:
    """The ``Allow`` header of a route with ``methods``: HEAD goes with GET, and OPTIONS is
    answered everywhere."""
    allowed = set(methods) | {"OPTIONS"}
    if "GET" in allowed:
        allowed.add("HEAD")
    return ", ".join(sorted(allowed))


_QUERY = re.compile(r"\?[^\s\"]*")
_FLAGS = {"1": True, "true": True, "0": False, "false": False}
_DIGITS = re.compile(r"[0-9]{1,15}")
_INTEGER = re.compile(r"-?[0-9]+")
