"""The HTTP API: one tenant's memory for other agents, as JSON over HTTP (``kbmem serve``).

Every request but ``GET /v1/health`` presents ``Authorization: Bearer <token>``; the token
(see :mod:`kbmem.tokens`) decides the tenant, so no route takes a tenant and none can reach
another tenant's pages. Bad input is answered with a 4xx status and a JSON body
``{"error": {"code", "message", "field"}}``; nothing is written before a request has been
read and checked whole.

Routes (all JSON)::

    GET    /v1/health
    GET    /v1/pages                  ?at=REV
    GET    /v1/pages/<page-id>        ?at=REV
    GET    /v1/history                ?page=<page-id>&limit=N
    POST   /v1/search                 {query, tool?, k?}
    POST   /v1/research               {request, max_pages?, depth?, max_tokens?, engine?,
                                       trace?, stream?}
    POST   /v1/sessions               a session in the Summit shape
    POST   /v1/chats                  {chat_id?}
    POST   /v1/chats/<chat-id>/messages {message}
    DELETE /v1/chats/<chat-id>        commit the chat's pending turns and close it
    GET    /v1/turns                  ?chat=<chat-id>
    GET    /v1/turns/<chat-id>/<n>    the audit of one turn

``POST /v1/research`` with ``"stream": true`` answers ``text/event-stream``: a ``trace``
event per research step as it happens, then one ``briefing`` event (or ``error``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .errors import KbmemError, ValidationError
from .service import CHAT_IDLE_SECONDS, Memory, close_idle_chats_until, kbmem_version
from .store import KnowledgeBase
from .tokens import TokenStore

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An HTTP-level refusal (no token, unknown route, body too large)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or {}


ERROR_CODES = {400: "invalid", 403: "forbidden", 404: "not_found", 409: "conflict", 502: "llm"}


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "field": field}}


class MemoryServer(ThreadingHTTPServer):
    """The server: one :class:`Memory` per tenant, opened on first use and closed (pending
    chat turns committed) at :meth:`close_memories`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        kb: KnowledgeBase,
        model: str | None = None,
        chat_idle_seconds: float = CHAT_IDLE_SECONDS,
    ):
        super().__init__(address, Handler)
        self.kb = kb
        self.model = model
        self.tokens = TokenStore(kb.state_dir)
        # Room for the largest session the memorizer takes, as JSON (escapes can double it).
        max_session = int(kb.settings.section("memorizer")["max_session_bytes"])
        self.max_body = 2 * max_session + 1024 * 1024
        self.chat_idle_seconds = chat_idle_seconds
        self._memories: dict[str, Memory] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper = threading.Thread(
            target=close_idle_chats_until,
            args=(self._stop, self._open_memories, chat_idle_seconds),
            name="kbmem-idle-chats",
            daemon=True,
        )
        self._reaper.start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def memory(self, tenant: str) -> Memory:
        with self._lock:
            if tenant not in self._memories:
                self._memories[tenant] = Memory(self.kb, tenant, self.model)
            return self._memories[tenant]

    def _open_memories(self) -> list[Memory]:
        with self._lock:
            return list(self._memories.values())

    def close_memories(self) -> None:
        self._stop.set()
        with self._lock:
            memories = list(self._memories.values())
            self._memories.clear()
        for memory in memories:
            memory.close()

    def server_close(self) -> None:
        self.close_memories()
        super().server_close()


Route = Callable[["Handler", Memory, list[str], dict[str, list[str]]], Any]


class Handler(BaseHTTPRequestHandler):
    server: MemoryServer
    protocol_version = "HTTP/1.1"

    def version_string(self) -> str:
        return f"kbmem/{kbmem_version()}"

    # -- plumbing -----------------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        # The request line only: never headers, so never a token.
        log.info("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

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
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        # A body this request leaves unread would be taken for the next request on the
        # connection: json_body marks it read; otherwise the connection is closed after.
        self._body_read = self.headers.get("Content-Length", "0").strip() == "0" and not (
            self.headers.get("Transfer-Encoding")
        )
        try:
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.split("/") if p]
            query = parse_qs(url.query, keep_blank_values=True)
            if parts == ["v1", "health"] and method == "GET":
                self._send_json(200, {"status": "ok", "version": kbmem_version()})
                return
            route = self._route(method, parts)
            tenant = self._tenant()
            status, body = route(self, self.server.memory(tenant), parts[2:], query)
            if body is not None:
                self._send_json(status, body)
        except ApiError as exc:
            self._send_json(exc.status, error_body(exc.code, str(exc)), exc.headers)
        except KbmemError as exc:
            status = exc.http_status
            field = getattr(exc, "field", None)
            message = getattr(exc, "problem", None) if field else None
            self._send_json(
                status,
                error_body(ERROR_CODES.get(status, "error"), message or str(exc), field),
            )
        except (BrokenPipeError, ConnectionResetError):
            log.info("client went away during %s %s", method, self.path)
        except Exception:
            log.exception("internal error in %s %s", method, self.path)
            self._send_json(500, error_body("internal", "internal error; see the server's log"))
        finally:
            if not self._body_read:
                self.close_connection = True

    def _route(self, method: str, parts: list[str]) -> Route:
        if len(parts) < 2 or parts[0] != "v1" or parts[1] not in ROUTES:
            raise ApiError(404, "not_found", f"no such route: {self.path.split('?')[0]}")
        by_method = ROUTES[parts[1]]
        if method not in by_method:
            allowed = ", ".join(sorted(by_method))
            raise ApiError(
                405, "method_not_allowed", f"{method} is not allowed here", {"Allow": allowed}
            )
        return by_method[method]

    def _tenant(self) -> str:
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

    def json_body(self) -> dict[str, Any]:
        """The request's JSON object, read whole before anything is done with it."""
        length_text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            raise ApiError(411, "length_required", "send the body with a Content-Length")
        if length_text is None:
            raise ApiError(411, "length_required", "send a JSON body with a Content-Length")
        try:
            length = int(length_text)
        except ValueError:
            raise ApiError(400, "invalid", "Content-Length is not a number") from None
        if length < 0:
            raise ApiError(400, "invalid", "Content-Length is not a number")
        if length > self.server.max_body:
            raise ApiError(
                413,
                "too_large",
                f"the body is {length} bytes; at most {self.server.max_body} are accepted",
            )
        raw = self.rfile.read(length)
        self._body_read = True
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
        return body

    # -- routes -------------------------------------------------------------------------------

    def pages(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        at = _one(query, "at")
        if not rest:
            return 200, {"tenant": memory.tenant, "pages": memory.pages(at)}
        return 200, memory.page("/".join(rest), at)

    def history(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        _no_more(rest)
        limit = _one(query, "limit")
        if limit is not None:
            if not limit.isdigit():
                raise ValidationError("must be a whole number", "limit")
            limit = int(limit)
        page = _one(query, "page")
        return 200, {"tenant": memory.tenant, "commits": memory.history(page, limit)}

    def search(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        _no_more(rest)
        body = self.json_body()
        _known(body, {"query", "tool", "k"})
        return 200, memory.search(body.get("query"), body.get("tool"), body.get("k"))

    def research(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        _no_more(rest)
        body = self.json_body()
        _known(body, {"request", "max_pages", "depth", "max_tokens", "engine", "trace", "stream"})
        for flag in ("trace", "stream"):
            if not isinstance(body.get(flag, False), bool):
                raise ValidationError("must be true or false", flag)
        args = {
            "max_pages": body.get("max_pages"),
            "depth": body.get("depth"),
            "max_tokens": body.get("max_tokens"),
            "engine": body.get("engine"),
        }
        if not body.get("stream"):
            briefing = memory.research(body.get("request"), trace=bool(body.get("trace")), **args)
            return 200, briefing
        self._stream_research(memory, body.get("request"), args)
        return 200, None

    def _stream_research(self, memory: Memory, request: Any, args: dict[str, Any]) -> None:
        """Server-sent events: the trace as it happens, then the briefing. Arguments are
        checked before the stream starts, so a bad request still gets a 4xx."""
        from .service import _text_arg

        _text_arg(request, "request")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

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
            briefing = memory.research(
                request, on_event=lambda event: emit("trace", event.to_dict()), **args
            )
        except KbmemError as exc:
            emit("error", error_body(ERROR_CODES.get(exc.http_status, "error"), str(exc)))
            return
        emit("briefing", briefing)

    def sessions(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        _no_more(rest)
        result = memory.ingest(self.json_body())
        return (201 if result["status"] == "created" else 200), result

    def chats(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        if not rest:
            body = self.json_body()
            _known(body, {"chat_id"})
            return 201, {"chat_id": memory.open_chat(body.get("chat_id"))}
        if len(rest) == 2 and rest[1] == "messages":
            body = self.json_body()
            _known(body, {"message"})
            return 200, memory.send(rest[0], body.get("message"))
        raise ApiError(404, "not_found", f"no such route: {self.path.split('?')[0]}")

    def close_chat(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        if len(rest) != 1:
            raise ApiError(404, "not_found", f"no such route: {self.path.split('?')[0]}")
        return 200, memory.close_chat(rest[0])

    def turns(self, memory: Memory, rest: list[str], query: dict[str, list[str]]) -> Any:
        if not rest:
            return 200, {"tenant": memory.tenant, "turns": memory.turns(_one(query, "chat"))}
        if len(rest) != 2:
            raise ApiError(404, "not_found", "name a turn as /v1/turns/<chat-id>/<n>")
        return 200, memory.audit("/".join(rest))


ROUTES: dict[str, dict[str, Route]] = {
    "pages": {"GET": Handler.pages},
    "history": {"GET": Handler.history},
    "search": {"POST": Handler.search},
    "research": {"POST": Handler.research},
    "sessions": {"POST": Handler.sessions},
    "chats": {"POST": Handler.chats, "DELETE": Handler.close_chat},
    "turns": {"GET": Handler.turns},
}


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationError("given more than once", name)
    return values[0]


def _no_more(rest: list[str]) -> None:
    if rest:
        raise ApiError(404, "not_found", "no such route")


def _known(body: dict[str, Any], names: set[str]) -> None:
    """A misspelt field ("max_page") is an error, not silently the default."""
    unknown = sorted(set(body) - names)
    if unknown:
        raise ValidationError(
            f"unknown field(s) {', '.join(map(repr, unknown))}; "
            f"expected {', '.join(sorted(names))}",
            "body",
        )
