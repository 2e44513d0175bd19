"""Reading the memory: health, the pages, one page, the history."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kbmem.errors import PageFormatError
from kbmem.interfaces.envelope import json_response
from kbmem.interfaces.routes.common import (
    GET,
    flag,
    ids,
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
from kbmem.interfaces.schema import ListPagesArgs, PageHistoryArgs, ReadPageArgs
from kbmem.interfaces.service import health as service_health

router = APIRouter()


@router.get("/v1/health", summary="Liveness and version", responses=responses(503))
async def health(request: Request) -> Response:
    return json_response(200, service_health(state_of(request).kb))


@router.get(
    "/v1/pages",
    summary="A window of the tenant's pages",
    responses=responses(*GET),
    openapi_extra=query(ListPagesArgs),
)
async def pages(request: Request) -> Response:
    memory = await memory_of(request)
    known(request, "at", "limit", "offset")
    args = (one(request, "at"), whole(request, "limit"), whole(request, "offset"))
    listed = await run(memory.list_pages, *args)
    return json_response(200, with_camel_case({"tenant": memory.tenant, **listed}))


@router.get(
    "/v1/pages/{page_id:path}",
    summary="One page, as stored",
    responses=responses(*GET, 422),
    openapi_extra=query(ReadPageArgs, skip=("page_id",)),
)
async def page(request: Request, page_id: str) -> Response:
    memory = await memory_of(request)
    known(request, "at", "raw")
    page_id = "/".join(ids(p) for p in page_id.split("/") if p)
    try:
        found = await run(memory.page, page_id, one(request, "at"), flag(request, "raw"))
    except PageFormatError as exc:
        exc.hint = f"GET /v1/pages/{page_id}?raw=1 gives the page as stored, to repair it"
        raise
    return json_response(200, with_camel_case(found))


@router.get(
    "/v1/history",
    summary="Commits, newest first",
    responses=responses(*GET),
    openapi_extra=query(PageHistoryArgs, page_id="page"),
)
async def history(request: Request) -> Response:
    memory = await memory_of(request)
    known(request, "page", "limit", "before")
    args = (one(request, "page"), whole(request, "limit"), one(request, "before"))
    return await tenant_window(memory, memory.history, args, ("page", "page_id"))
