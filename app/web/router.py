"""The ladder front-end: static files served by the app itself, built on the public API only (no build step)."""

from __future__ import annotations

from html import escape
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from app.core.errors import EXPLAINED

WEB = Path(__file__).resolve().parent
static = StaticFiles(directory=WEB / "static")
#: Swagger UI as installed with the app (the fastapi-offline package), so /docs works without internet.
docs_assets = StaticFiles(directory=str(files("fastapi_offline") / "static"))
router = APIRouter(include_in_schema=False)


def page() -> FileResponse:
    """One page for every front-end address; the script reads the path and draws the view."""
    return FileResponse(WEB / "index.html", media_type="text/html")


def no_page() -> FileResponse:
    """A mistyped address under /ladders: the same page, which says there is nothing here, with a 404."""
    return FileResponse(WEB / "index.html", media_type="text/html", status_code=404)


router.add_api_route("/", page, methods=["GET"])
router.add_api_route("/ladders/{slug}", page, methods=["GET"])
router.add_api_route("/ladders/{slug}/players/{key}", page, methods=["GET"])
router.add_api_route("/ladders/{slug}/admin", page, methods=["GET"])
router.add_api_route("/ladders/{slug}/settings", page, methods=["GET"])  # the admin page's old address
router.add_api_route("/ladders/{rest:path}", no_page, methods=["GET"])


@router.get("/problems/{name}")
def problem_page(name: str) -> HTMLResponse:
    """The page a problem's `type` points at: what it means and what to do."""
    if name not in EXPLAINED:
        return HTMLResponse(_problem_html("Unknown problem type", "There is no problem type of this name.", ""), 404)
    return HTMLResponse(_problem_html(*EXPLAINED[name]))


def _problem_html(title: str, meaning: str, remedy: str) -> str:
    def text(s: str) -> str:  # `code` spans, the rest escaped
        return "".join(f"<code>{part}</code>" if n % 2 else part for n, part in enumerate(escape(s).split("`")))

    todo = f"<h2>What to do</h2><p>{text(remedy)}</p>" if remedy else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · melo</title></head><body><main><h1>{escape(title)}</h1><p>{text(meaning)}</p>"
        f"{todo}<p>Every error of this service is an <code>application/problem+json</code> body (RFC 9457) whose "
        '<code>type</code> is this page. <a href="/docs">The API documentation</a>.</p></main></body></html>'
    )


@router.get("/docs")
def swagger_ui() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="melo API",
        swagger_js_url="/docs-assets/swagger-ui-bundle.js",
        swagger_css_url="/docs-assets/swagger-ui.css",
        swagger_favicon_url="/docs-assets/favicon.png",
    )
