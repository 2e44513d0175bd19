"""What every HTTP answer of kbmem shares, whichever part of the server gives it (the ``/v1``
and ``/memory`` routes, ``/mcp``, the connection guard): the JSON error envelope
``{"error": {"code", "message", "field", "hint"?}}`` and the reading of the bearer token
that decides the tenant.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response
from starlette.types import Send

from kbmem.interfaces.tokens import TokenStore

CREATE_TOKEN = "create one with 'kbmem token create'"


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


def error_json(code: str, message: str) -> bytes:
    """:func:`error_body` as the bytes of a response written by hand."""
    return json.dumps(error_body(code, message)).encode()


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return Response(
        data,
        status,
        {"Cache-Control": "no-store", **(headers or {})},
        media_type="application/json; charset=utf-8",
    )


async def send_response(send: Send, response: Response) -> None:
    """``response`` sent on a raw ASGI channel (outside a route)."""
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": response.raw_headers,
        }
    )
    await send({"type": "http.response.body", "body": response.body})


async def send_error(send: Send, error: ApiError) -> None:
    await send_response(
        send, json_response(error.status, error_body(error.code, str(error)), error.headers)
    )


def bearer_token(authorization: Sequence[str]) -> str:
    """The token of the request's ``Authorization`` headers (all of them, as sent): exactly
    one, ``Bearer <token>``. Several are refused (400): which one counts would differ between
    kbmem and a proxy in front. None, or another scheme, is a 401."""
    if len(authorization) > 1:
        raise ApiError(400, "invalid", "send one Authorization header, not several")
    scheme, _, token = (authorization[0] if authorization else "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "unauthorized",
            f"send 'Authorization: Bearer <token>' ({CREATE_TOKEN})",
            {"WWW-Authenticate": "Bearer"},
        )
    return token.strip()


def tenant_of(tokens: TokenStore, authorization: Sequence[str]) -> str:
    """The tenant whose token the request presents, or an :class:`ApiError` (400, 401)."""
    tenant = tokens.tenant_of(bearer_token(authorization))
    if tenant is None:
        raise ApiError(
            401, "unauthorized", "the token is not valid", {"WWW-Authenticate": "Bearer"}
        )
    return tenant
