"""The ladder front-end: static files served by the app itself, built on the public API only (no build step)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

WEB = Path(__file__).resolve().parent
static = StaticFiles(directory=WEB / "static")
router = APIRouter(include_in_schema=False)


def page() -> FileResponse:
    """One page for every front-end address; the script reads the path and draws the view."""
    return FileResponse(WEB / "index.html", media_type="text/html")


router.add_api_route("/", page, methods=["GET"])
router.add_api_route("/ladders/{slug}", page, methods=["GET"])
router.add_api_route("/ladders/{slug}/players/{key}", page, methods=["GET"])
router.add_api_route("/ladders/{slug}/settings", page, methods=["GET"])
