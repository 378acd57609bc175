"""Domain errors and RFC 9457 problem+json responses."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.rating import RatingInputError

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "https://melo.example/problems/"
log = logging.getLogger("melo")


class Problem(Exception):
    """An error that becomes a problem+json response."""

    status = 400
    title = "Bad request"
    slug = "bad-request"

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"type": TYPE_BASE + self.slug, "title": self.title, "status": self.status, "detail": self.detail} | (
            self.extra
        )


class NotFound(Problem):
    status, title, slug = 404, "Not found", "not-found"


class Unauthorized(Problem):
    status, title, slug = 401, "Authentication required", "unauthorized"


class Forbidden(Problem):
    status, title, slug = 403, "Forbidden", "forbidden"


class Conflict(Problem):
    status, title, slug = 409, "Conflict", "conflict"


class InvalidInput(Problem):
    status, title, slug = 422, "Invalid input", "invalid-input"


class PayloadTooLarge(Problem):
    status, title, slug = 413, "Payload too large", "payload-too-large"


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(problem.body(), status_code=problem.status, media_type=PROBLEM_JSON, headers=headers)


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    """("body", "sides", 1, "players") -> "sides[1].players"."""
    out = ""
    for part in loc:
        if part == "body" and not out:
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into problem+json."""

    @app.exception_handler(Problem)
    async def _problem(_: Request, exc: Problem) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return problem_response(exc, headers)

    @app.exception_handler(RatingInputError)
    async def _rating(_: Request, exc: RatingInputError) -> JSONResponse:
        return problem_response(InvalidInput(str(exc), errors=[{"field": exc.field, "message": exc.message}]))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": "body" if e["type"] == "json_invalid" else _field(e["loc"]), "message": e["msg"]}
            for e in exc.errors()
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return problem_response(InvalidInput(detail, errors=errors))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        problem = Problem(str(exc.detail))
        problem.status, problem.title, problem.slug = exc.status_code, str(exc.detail), f"http-{exc.status_code}"
        return problem_response(problem)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        problem = Problem("The server failed to process the request; it has been logged.")
        problem.status, problem.title, problem.slug = 500, "Internal server error", "internal"
        return problem_response(problem)


#: OpenAPI ``responses=`` entries for routes.
def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    described = {
        401: "No bearer key",
        403: "Wrong key",
        404: "Unknown ladder, player or game",
        409: "Conflict (idempotency key reused with another body, duplicate)",
        413: "Body too large",
        422: "Invalid input; `errors` names each field",
    }
    schema = {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "errors": {"type": "array", "items": {"type": "object"}},
        },
    }
    return {s: {"description": described[s], "content": {PROBLEM_JSON: {"schema": schema}}} for s in statuses}
