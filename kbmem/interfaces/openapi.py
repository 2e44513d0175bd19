"""``GET /openapi.json``: the HTTP API described as OpenAPI 3.1, its bodies from the pydantic
models of :mod:`kbmem.interfaces.schema`, so that a client can be generated from it."""

from __future__ import annotations

import functools
from typing import Any

from kbmem.interfaces.schema import schemas

_ERRORS = {
    "400": "Bad input: the error names the field as the client wrote it",
    "401": "No token, or one that is not valid",
    "403": "The body names a tenant the token does not grant",
    "404": "No such page, chat, turn or route",
    "405": "The route does not take this method (Allow names those it takes)",
    "409": "The knowledge base is busy (locked) or the chat is open elsewhere",
    "411": "A body without a Content-Length",
    "413": "A body larger than the route takes",
    "422": "A page or turn was broken by hand",
    "429": "Too many chats open",
    "502": "The language model failed",
    "503": "Too many connections, or (for /memory/*) the MEMORY_GAM_ENABLED flag is off",
}

# path, method, summary, request body schema (or None), query parameters, open (no token)
_ROUTES: tuple[tuple[str, str, str, str | None, tuple[str, ...], bool], ...] = (
    ("/v1/health", "get", "Liveness and version", None, (), True),
    ("/v1/pages", "get", "A window of the tenant's pages", None, ("at", "limit", "offset"), False),
    ("/v1/pages/{page_id}", "get", "One page, as stored", None, ("at", "raw"), False),
    ("/v1/history", "get", "Commits, newest first", None, ("page", "limit", "before"), False),
    ("/v1/search", "post", "Search the tenant's memory", "SearchRequest", (), False),
    ("/v1/research", "post", "A cited briefing (SSE with stream)", "ResearchRequest", (), False),
    ("/v1/sessions", "post", "Memorize a session", "SummitSession", (), False),
    ("/v1/chats", "post", "Open a chat", "OpenChatRequest", (), False),
    ("/v1/chats/{chat_id}", "delete", "Commit and close a chat", None, (), False),
    ("/v1/chats/{chat_id}/messages", "post", "One chat turn", "MessageRequest", (), False),
    ("/v1/turns", "get", "A window of chat turns", None, ("chat", "limit", "offset"), False),
    ("/v1/turns/{chat_id}/{n}", "get", "The audit of one turn", None, (), False),
    (
        "/memory/ingest_session",
        "post",
        "Memorize a session (Summit; needs MEMORY_GAM_ENABLED)",
        "SummitSession",
        (),
        False,
    ),
    (
        "/memory/build_context",
        "post",
        "A BriefingContext (Summit; needs MEMORY_GAM_ENABLED)",
        "BuildContextRequest",
        (),
        False,
    ),
    ("/metrics", "get", "Prometheus metrics (open on loopback)", None, (), True),
    ("/openapi.json", "get", "This document", None, (), True),
)

_RESPONSES = {
    "/memory/ingest_session": "IngestSessionResponse",
}


@functools.cache
def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI document of every route, its body, parameters and errors."""
    paths: dict[str, dict[str, Any]] = {}
    for path, method, summary, body, params, open_route in _ROUTES:
        error_ref = {"$ref": "#/components/schemas/ErrorResponse"}
        errors = {
            code: {"description": text, "content": {"application/json": {"schema": error_ref}}}
            for code, text in _ERRORS.items()
        }
        ok_schema = (
            {"$ref": f"#/components/schemas/{_RESPONSES[path]}"}
            if path in _RESPONSES
            else {"type": "object"}
        )
        operation: dict[str, Any] = {
            "summary": summary,
            "operationId": f"{method}_{path.strip('/').replace('/', '_').replace('.', '_')}",
            "responses": {
                "200": {
                    "description": "OK",
                    "content": {"application/json": {"schema": ok_schema}},
                },
                **errors,
            },
            "parameters": [
                {"name": p, "in": "path", "required": True, "schema": {"type": "string"}}
                for p in ("page_id", "chat_id", "n")
                if "{" + p + "}" in path
            ]
            + [{"name": q, "in": "query", "schema": {"type": "string"}} for q in params],
        }
        if not open_route:
            operation["security"] = [{"bearer": []}]
        if body is not None:
            operation["requestBody"] = {
                "required": body not in ("OpenChatRequest",),
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}
                },
            }
        paths.setdefault(path, {})[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "kbmem", "version": version},
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
