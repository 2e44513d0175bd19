"""The Summit note's routes, behind the ``MEMORY_GAM_ENABLED`` flag (503 while it is off),
and the Prometheus metrics (open on loopback, else with a token)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from kbmem.interfaces import summit
from kbmem.interfaces.envelope import ApiError, json_response
from kbmem.interfaces.routes.common import (
    POST,
    body_doc,
    json_body,
    loopback,
    memory_of,
    responses,
    run,
    state_of,
    tenant_of,
)
from kbmem.interfaces.schema import BuildContextRequest, IngestSessionResponse, SummitSession
from kbmem.interfaces.summit import FLAG
from kbmem.telemetry import metrics_text

router = APIRouter()


def gam_flag(request: Request) -> None:
    if not state_of(request).gam_enabled:
        raise ApiError(503, "disabled", f"the GAM routes are off; set {FLAG}=true to turn them on")


@router.post(
    "/memory/ingest_session",
    summary="Memorize a session (Summit; needs MEMORY_GAM_ENABLED)",
    responses=responses(*POST, 409, ok=IngestSessionResponse),
    openapi_extra=body_doc("SummitSession"),
)
async def ingest_session(request: Request) -> Response:
    memory = await memory_of(request)
    gam_flag(request)
    state = state_of(request)
    body = await json_body(request, state, SummitSession.model_fields, state.max_body)
    return json_response(200, await run(summit.ingest_session, memory, body))


@router.post(
    "/memory/build_context",
    summary="A BriefingContext (Summit; needs MEMORY_GAM_ENABLED)",
    responses=responses(*POST, 403, 502),
    openapi_extra=body_doc("BuildContextRequest"),
)
async def build_context(request: Request) -> Response:
    memory = await memory_of(request)
    gam_flag(request)
    body = await json_body(request, state_of(request), BuildContextRequest.model_fields)
    return json_response(200, await run(summit.build_context, memory, body))


@router.get(
    "/metrics",
    summary="Prometheus metrics (open on loopback, else with a token)",
    responses=responses(401, 503),
)
async def metrics(request: Request) -> Response:
    client = request.client.host if request.client else ""
    if not loopback(client):
        tenant_of(state_of(request), request)
    return Response(
        metrics_text(), 200, {"Cache-Control": "no-store"}, media_type=CONTENT_TYPE_LATEST
    )
