"""The guard: what every request passes before routing (see :class:`Guard`)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from fastapi import APIRouter, FastAPI
from fastapi.responses import Response
from starlette.routing import Match, Route, Router
from starlette.types import Message, Receive, Scope, Send

from kbmem.interfaces.envelope import error_body, json_response, send_response
from kbmem.interfaces.limits import MAX_HEAD_BYTES
from kbmem.interfaces.routes.common import ApiState, Exchange
from kbmem.telemetry import HTTP_LATENCY, HTTP_REQUESTS, caller_trace

log = logging.getLogger("kbmem.interfaces.app")

MATCHED = "kbmem.route"  # the route the guard found, and its scope (see Matched)
KNOWN_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "DELETE", "PUT", "PATCH"})


class Guard:
    """The outermost layer: an unknown method is 501, ``OPTIONS`` is answered from the routes
    (204 with ``Allow``, no token needed: the methods are no secret), a path no route has is
    404 and a method its route does not take 405 (with ``Allow``); each request is counted and
    timed by route; a response that leaves the client's body unread closes the connection
    (what follows on it cannot be trusted); the request line is logged without its query
    string, where a client may have put a token."""

    def __init__(self, app: FastAPI, routers: Iterable[APIRouter]):
        """``routers``: those the app includes (FastAPI keeps an included router whole, as
        one entry of the app's routes, so their routes are listed from them)."""
        self.app = app
        self.state: ApiState = app.state.api
        self.routers = tuple(routers)

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

        parent = headers.get(b"traceparent")
        state = headers.get(b"tracestate")
        self.state.in_flight += 1
        try:
            with caller_trace(
                parent.decode("latin-1") if parent else None,
                state.decode("latin-1") if state else None,
            ):
                await self._answer(scope, receive, guarded_send, method, record)
        finally:
            self.state.in_flight -= 1
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
        if method == "HEAD":  # as GET; the server sends the headers without the body
            scope = {**scope, "method": "GET"}
        route, child_scope = self._match(scope)
        if route is None:
            message = (
                "name a turn as /v1/turns/<chat-id>/<n>"
                if path.startswith("/v1/turns/")
                else f"no such route: {path}"
            )
            await _send_json(send, 404, error_body("not_found", message))
            return
        record.route = route.path_format
        if child_scope is None:  # the path is a route's, the method is not
            methods = self._methods_at(scope)
            if method == "OPTIONS":
                await _send_empty(send, 204, {"Allow": _allow(methods)})
                return
            await _send_json(
                send,
                405,
                error_body("method_not_allowed", f"{method} is not allowed here"),
                {"Allow": _allow(methods)},
            )
            return
        # The router is told which route this is rather than matching the path again
        # (FastAPI matched it twice more: docs/decisions/route-matched-once.md).
        scope[MATCHED] = (route, child_scope)
        await self.app(scope, receive, send)

    @functools.cached_property
    def _routes(self) -> list[tuple[Route, set[str]]]:
        """The routes and their methods, listed once: they do not change after start."""
        routes = [*self.app.router.routes, *(r for router in self.routers for r in router.routes)]
        return [
            (route, set(route.methods))
            for route in routes
            if isinstance(route, Route) and route.methods  # not /mcp, not a router
        ]

    def _match(self, scope: Scope) -> tuple[Route | None, Scope | None]:
        """The route that answers the request and the scope it adds (its endpoint, path
        parameters), as Starlette's router would choose it: the first whose path and method
        match. A path some route has with a method none takes: that route and None. No
        route for the path: (None, None)."""
        partial = None
        for route, _methods in self._routes:
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                return route, child_scope
            if match is Match.PARTIAL and partial is None:
                partial = route
        return partial, None

    def _methods_at(self, scope: Scope) -> set[str]:
        """The methods of every route whose path matches the request's."""
        probe = {**scope, "method": "GET"}
        found: set[str] = set()
        for route, methods in self._routes:
            if route.matches(probe)[0] is not Match.NONE:
                found |= methods
        return {m for m in found if m != "HEAD"}


class Matched:
    """The innermost layer of the app, where its router was: a request the guard has matched
    (``scope[MATCHED]``) goes straight to its route, as the router would send it; any other
    (``/mcp``, the lifespan) through the router."""

    def __init__(self, router: Router):
        self.router = router
        self.routing = router.middleware_stack

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = scope.pop(MATCHED, None)
        if found is None:
            await self.routing(scope, receive, send)
            return
        route, child_scope = found
        scope.setdefault("router", self.router)
        scope.update(child_scope)
        await route.handle(scope, receive, send)


def _escape_slash(part: str) -> str:
    return part.replace("%", "%25").replace("/", "%2F")


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
    await send_response(send, json_response(status, body, headers))


async def _send_empty(send: Send, status: int, headers: dict[str, str]) -> None:
    await send_response(send, Response(None, status, {"Cache-Control": "no-store", **headers}))
