"""The HTTP side of errors: every exception becomes an RFC 9457 problem+json response."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import InternalError as DriverInternalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.core.errors import PROBLEM_JSON, InvalidInput, Problem, TooManyRequests, Unavailable
from app.core.schemas import PATTERNS
from app.rating import RatingInputError

log = logging.getLogger("melo")


def problem_response(problem: Problem, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(problem.body(), status_code=problem.status, media_type=PROBLEM_JSON, headers=headers)


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    """("body", "sides", 1, "players") -> "sides[1].players"; ("header", "idempotency-key") -> "Idempotency-Key"."""
    if len(loc) == 2 and loc[0] == "header":
        return "-".join(word.capitalize() for word in str(loc[1]).replace("_", "-").split("-"))
    out = ""
    for part in loc:
        if part == "body" and not out:
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def _message(error: dict) -> str:
    """Pydantic's message for people: without its "Value error, " prefix, and a pattern as the rule it stands for
    (:data:`app.core.schemas.PATTERNS`), not as a regular expression."""
    if error["type"] == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern")
        rule = PATTERNS.get(pattern) if isinstance(pattern, str) else None
        return rule or "has characters or a form this field does not take"
    message = error["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into problem+json."""

    @app.exception_handler(Problem)
    async def _problem(_: Request, exc: Problem) -> JSONResponse:
        headers = {401: {"WWW-Authenticate": "Bearer"}, 503: {"Retry-After": "5"}}.get(exc.status)
        if isinstance(exc, TooManyRequests):
            headers = {"Retry-After": str(exc.retry_after)}
        return problem_response(exc, headers)

    @app.exception_handler(RatingInputError)
    async def _rating(_: Request, exc: RatingInputError) -> JSONResponse:
        return problem_response(InvalidInput(str(exc), errors=[{"field": exc.field, "message": exc.message}]))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": "body" if e["type"] == "json_invalid" else _field(e["loc"]), "message": _message(e)}
            for e in exc.errors()
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return problem_response(InvalidInput(detail, errors=errors))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        problem = Problem(str(exc.detail))
        slug = {400: "bad-request", 404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "bad-request")
        problem.status, problem.title, problem.slug = exc.status_code, str(exc.detail), slug
        headers = exc.headers
        if exc.status_code == 405:  # every method some route takes at this path, not only the first route's
            headers = {"Allow": ", ".join(_allowed(request))}
        return problem_response(problem, headers)

    # A server shutting down or starting (57P01-57P03) raises OperationalError; a primary demoted under the
    # service's connections (a failover: the old primary rejoins as a standby) refuses writes with 25006.
    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    @app.exception_handler(psycopg.OperationalError)  # the hot reads use the drivers directly
    @app.exception_handler(psycopg.errors.ReadOnlySqlTransaction)
    @app.exception_handler(sqlite3.OperationalError)
    async def _database(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s", exc)
        problem = Unavailable("The database cannot be reached or is busy; retry shortly.")
        return problem_response(problem, {"Retry-After": "1"})

    @app.exception_handler(DriverInternalError)
    async def _internal(request: Request, exc: DriverInternalError) -> JSONResponse:
        if isinstance(exc.orig, psycopg.errors.ReadOnlySqlTransaction):
            return await _database(request, exc)
        return await _unexpected(request, exc)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return problem_response(internal_error())


def internal_error() -> Problem:
    """What a client is told of a bug: a 500 problem (the error itself goes to the log)."""
    problem = Problem("The server failed to process the request; it has been logged.")
    problem.status, problem.title, problem.slug = 500, "Internal server error", "internal"
    return problem


def _allowed(request: Request) -> list[str]:
    """The methods that some route of the app takes at the request's path."""
    methods = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")
    routes = request.app.routes
    return [m for m in methods if any(r.matches({**request.scope, "method": m})[0] == Match.FULL for r in routes)]
