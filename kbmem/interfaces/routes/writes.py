"""Writing to the memory: sessions, chats and their turns, and the audit of a turn."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kbmem.interfaces.envelope import json_response
from kbmem.interfaces.routes.common import (
    GET,
    POST,
    SECURED,
    body_doc,
    ids,
    json_body,
    known,
    memory_of,
    one,
    query,
    responses,
    run,
    state_of,
    tenant_window,
    whole,
    with_camel_case,
)
from kbmem.interfaces.schema import ListTurnsArgs, MessageRequest, OpenChatRequest, Session

router = APIRouter()


@router.post(
    "/v1/sessions",
    summary="Memorize a session",
    status_code=201,
    responses=responses(*POST, 409),
    openapi_extra=body_doc("Session"),
)
async def sessions(request: Request) -> Response:
    memory = await memory_of(request)
    state = state_of(request)
    body = await json_body(request, state, Session.model_fields, state.max_body)
    result = await run(memory.ingest, body)
    return json_response(201 if result["status"] == "created" else 200, result)


@router.post(
    "/v1/chats",
    summary="Open a chat",
    status_code=201,
    responses=responses(*POST, 409, 429),
    openapi_extra=body_doc("OpenChatRequest", required=False),
)
async def open_chat(request: Request) -> Response:
    memory = await memory_of(request)
    body = await json_body(request, state_of(request), OpenChatRequest.model_fields, optional=True)
    chat_id, opened = await run(memory.open_chat, body.get("chat_id"))
    return json_response(201 if opened else 200, with_camel_case({"chat_id": chat_id}))


@router.delete(
    "/v1/chats/{chat_id}",
    summary="Commit and close a chat",
    responses=responses(*GET, 409),
    openapi_extra=SECURED,
)
async def close_chat(request: Request, chat_id: str) -> Response:
    memory = await memory_of(request)
    closed = await run(memory.close_chat, ids(chat_id))
    return json_response(200, with_camel_case(closed))


@router.post(
    "/v1/chats/{chat_id}/messages",
    summary="One chat turn",
    responses=responses(*POST, 409, 502),
    openapi_extra=body_doc("MessageRequest"),
)
async def send(request: Request, chat_id: str) -> Response:
    memory = await memory_of(request)
    body = await json_body(request, state_of(request), MessageRequest.model_fields)
    reply = await run(memory.send, ids(chat_id), body.get("message"))
    return json_response(200, with_camel_case(reply))


@router.get(
    "/v1/turns",
    summary="A window of chat turns",
    responses=responses(*GET),
    openapi_extra=query(ListTurnsArgs, chat_id="chat"),
)
async def turns(request: Request) -> Response:
    memory = await memory_of(request)
    known(request, "chat", "limit", "offset")
    args = (one(request, "chat"), whole(request, "limit"), whole(request, "offset"))
    return await tenant_window(memory, memory.list_turns, args, ("chat", "chat_id"))


@router.get(
    "/v1/turns/{chat_id}/{n}",
    summary="The audit of one turn",
    responses=responses(*GET, 422),
    openapi_extra=SECURED,
)
async def audit(request: Request, chat_id: str, n: str) -> Response:
    memory = await memory_of(request)
    return json_response(200, await run(memory.audit, f"{ids(chat_id)}/{ids(n)}"))
