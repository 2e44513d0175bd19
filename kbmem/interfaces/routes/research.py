"""Finding things: search, and research (a briefing, or server-sent events with ``stream``).

``POST /v1/research`` with ``"stream": true`` answers ``text/event-stream``: a ``trace``
event per research step as it happens, then one ``briefing`` event (or ``error``), each with
an ``id:`` (its sequence number, from 1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from kbmem.errors import KbmemError, ValidationError
from kbmem.interfaces.envelope import error_body, json_response
from kbmem.interfaces.routes.common import (
    INLINE_SEARCH_MS,
    POST,
    body_doc,
    error_of,
    json_body,
    log,
    memory_of,
    responses,
    run,
    state_of,
)
from kbmem.interfaces.schema import ResearchRequest, SearchRequest

router = APIRouter()

MAX_SEARCH_KINDS = 1024  # (tenant, tool) durations kept; beyond, the record starts over


@router.post(
    "/v1/search",
    summary="Search the tenant's memory",
    responses=responses(*POST),
    openapi_extra=body_doc("SearchRequest"),
)
async def search(request: Request) -> Response:
    state = state_of(request)
    memory = await memory_of(request)
    body = await json_body(request, state, SearchRequest.model_fields)
    query, tool, k = body.get("query"), body.get("tool"), body.get("k")
    kind = (memory.tenant, tool if isinstance(tool, str) else "hybrid")

    def timed(wait: bool) -> dict[str, Any]:
        # Its thread's CPU time: the work the search does, not how long the machine's other
        # work kept it from running (under load, wall times of the same search vary 10x).
        started = time.thread_time()
        try:
            return memory.search(query, tool, k, wait=wait)
        finally:
            if len(state.search_ms) > MAX_SEARCH_KINDS:
                state.search_ms.clear()
            state.search_ms[kind] = (time.thread_time() - started) * 1000

    with memory.kb.one_head():  # the check and the search read HEAD once between them
        if (
            state.in_flight == 1
            and state.search_ms.get(kind, INLINE_SEARCH_MS) < INLINE_SEARCH_MS
            and memory.search_ready()
        ):
            # Alone, quick last time, and nothing to wait for: the thread hop would cost
            # more than it spares anyone (INLINE_SEARCH_MS).
            return json_response(200, timed(wait=False))
    return json_response(200, await run(timed, True))


@router.post(
    "/v1/research",
    summary="A cited briefing (server-sent events with stream)",
    responses=responses(*POST, 502),
    openapi_extra=body_doc("ResearchRequest"),
)
async def research(request: Request) -> Response:
    memory = await memory_of(request)
    body = await json_body(request, state_of(request), ResearchRequest.model_fields)
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
