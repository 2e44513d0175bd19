"""The interactive API docs, ``GET /docs``: FastAPI's Swagger UI page, with its script,
stylesheet and icon served by this server (``/docs/assets/...``) from the copies that the
fastapi-offline package ships, as FastAPI's guide to self-hosting them shows. Nothing is
loaded from a CDN, so the page works on a server without internet. No token: the page says
only what ``/openapi.json`` says, and a call made from it presents its own token."""

from __future__ import annotations

import functools
from importlib.resources import files

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from kbmem.interfaces.envelope import ApiError

router = APIRouter()

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}


@functools.cache
def asset_bytes(name: str) -> bytes:
    return files("fastapi_offline").joinpath("static", name).read_bytes()


@router.get("/docs", include_in_schema=False)
async def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="kbmem API",
        swagger_js_url="/docs/assets/swagger-ui-bundle.js",
        swagger_css_url="/docs/assets/swagger-ui.css",
        swagger_favicon_url="/docs/assets/favicon.png",
        oauth2_redirect_url=None,
    )


@router.get("/docs/assets/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    if name not in ASSETS:
        raise ApiError(404, "not_found", f"no such asset: {name}")
    return Response(
        asset_bytes(name), 200, {"Cache-Control": "public, max-age=86400"}, ASSETS[name]
    )
