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
    GET    /docs                      the interactive docs (Swagger UI, served offline)
    *      /mcp                       the MCP server (Streamable HTTP)

The routes are in :mod:`kbmem.interfaces.routes`, one router per area; what they share,
and the order of their checks, in :mod:`kbmem.interfaces.routes.common`; the guard every
request passes before routing in :mod:`kbmem.interfaces.routes.guard`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from kbmem.errors import KbmemError
from kbmem.interfaces.envelope import ApiError, error_body, json_response
from kbmem.interfaces.mcp_sdk.http import McpHttp
from kbmem.interfaces.routes import docs, gam, pages, research, writes
from kbmem.interfaces.routes.common import ApiState, error_of
from kbmem.interfaces.routes.guard import Guard, Matched
from kbmem.interfaces.schema import schemas
from kbmem.interfaces.service import kbmem_version

__all__ = ["ApiState", "Guard", "create_app"]

log = logging.getLogger(__name__)


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
        docs_url=None,  # FastAPI's page loads its assets from a CDN; routes.docs does not
        redoc_url=None,
        # FastAPI's own OpenTelemetry (a span per request and per step of it, request
        # metrics) is off: the guard counts and times each request by route already, the
        # span would record the query string, and with an SDK installed it cost more per
        # request than the rest of the app (docs/http-api.md, Traces).
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.state.api = state

    routers = [area.router for area in (pages, research, writes, gam, docs)]
    for router in routers:
        app.include_router(router)

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

    # The guard matches each request's route once; the router then only hands it on.
    app.router.middleware_stack = Matched(app.router)
    return Guard(app, routers)
