"""The ladder front-end: static files served by the app itself, built on the public API only (no build step)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

WEB = Path(__file__).resolve().parent
static = StaticFiles(directory=WEB / "static")
#: Swagger UI as installed with the app (the fastapi-offline package), so /docs works without internet.
docs_assets = StaticFiles(directory=str(files("fastapi_offline") / "static"))
router = APIRouter(include_in_schema=False)


def page() -> FileResponse:
    """One page for every front-end address; the script reads the path and draws the view."""
    return FileResponse(WEB / "index.html", media_type="text/html")


router.add_api_route("/", page, methods=["GET"])
router.add_api_route("/ladders/{slug}", page, methods=["GET"])
router.add_api_route("/ladders/{slug}/players/{key}", page, methods=["GET"])
router.add_api_route("/ladders/{slug}/settings", page, methods=["GET"])


@router.get("/docs")
def swagger_ui() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="melo API",
        swagger_js_url="/docs-assets/swagger-ui-bundle.js",
        swagger_css_url="/docs-assets/swagger-ui.css",
        swagger_favicon_url="/docs-assets/favicon.png",
    )
