"""Domain errors as RFC 9457 problems (``app.http.handlers`` turns them into HTTP responses)."""

from __future__ import annotations

import re
from typing import Any

PROBLEM_JSON = "application/problem+json"
#: Problem types are addresses of this service (relative references, RFC 9457 §3.1.1): ``GET /problems/{slug}``
#: answers a page saying what the problem means and what to do (:data:`EXPLAINED`).
TYPE_BASE = "/problems/"


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


#: A detail that starts by naming its field (``into: …``).
_FIELD_PREFIX = re.compile(r"^[a-z_][a-z0-9_.\[\]]*: ")


class _Explained(Problem):
    """A problem with the request's content (409, 422): its ``errors`` name each field and say what is wrong with
    it. Where a caller gives no list, or an entry without a message, they come from ``field`` (else the detail's
    ``field:`` prefix) and the detail's words."""

    def __init__(self, detail: str, errors: list[dict] | None = None, field: str | None = None, **extra: Any) -> None:
        prefix, said = detail.split(": ", 1) if _FIELD_PREFIX.match(detail) else (None, detail)
        named = field or prefix or "body"
        complete = [e | {"field": e.get("field") or named, "message": e.get("message") or said} for e in errors or [{}]]
        super().__init__(detail, errors=complete, **extra)


class Conflict(_Explained):
    status, title, slug = 409, "Conflict", "conflict"


class InvalidInput(_Explained):
    status, title, slug = 422, "Invalid input", "invalid-input"


class RequestTimeout(Problem):
    status, title, slug = 408, "Request timeout", "request-timeout"


class PayloadTooLarge(Problem):
    status, title, slug = 413, "Payload too large", "payload-too-large"


class TooManyRequests(Problem):
    status, title, slug = 429, "Too many requests", "too-many-requests"

    def __init__(self, detail: str, retry_after: int = 60, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.retry_after = retry_after


class Unavailable(Problem):
    status, title, slug = 503, "Service unavailable", "unavailable"


class LadderChanged(Unavailable):
    """A write read the ladder's settings (its k, how its keys match, its aliases) before another transaction
    changed them: it is rolled back, and retried once with the new ones."""

    def __init__(self, detail: str = "The ladder's settings changed while this was applied; retry it.") -> None:
        super().__init__(detail)


#: OpenAPI ``responses=`` entries for routes.
def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    described = {
        400: "Malformed request",
        401: "No bearer key: writes need one, and so do reads of a private ladder",
        403: "The key may not do this: another ladder's, revoked, or of a role below the one needed",
        404: "Unknown ladder, player or game",
        409: "Conflict (idempotency key reused with another body, duplicate)",
        405: "Method not allowed here; `Allow` lists those that are",
        408: "The body did not arrive within the server's deadline",
        413: "Body too large",
        429: "Too many jobs queued, or heavy reads of this ladder waiting; retry after `Retry-After` seconds",
        503: "The database cannot be reached, or a report could not be computed (`detail` says which)",
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


#: What every route of a ladder may answer about access: writes need a key, and so do reads of a private ladder.
LADDER_ACCESS = problems(401, 403)


#: Each problem type's page: what it means, and what to do about it.
EXPLAINED: dict[str, tuple[str, str, str]] = {
    "bad-request": (
        "Bad request",
        "The request could not be read: not JSON, or not the shape any route takes.",
        "Send `Content-Type: application/json` and a body as the API documentation at /docs shows.",
    ),
    "invalid-input": (
        "Invalid input",
        "The request was read, but a value is not one this route accepts.",
        "The `errors` list names each field and says what is wrong with it; fix those and send it "
        "again. Nothing was changed.",
    ),
    "unauthorized": (
        "Authentication required",
        "Writes, and reads of a private ladder, need a key.",
        "Send `Authorization: Bearer <key>` with a key of the ladder (its admin creates keys at "
        "`POST /v1/ladders/{slug}/keys`).",
    ),
    "forbidden": (
        "Forbidden",
        "The key was recognised but may not do this: it belongs to another ladder, was "
        "revoked or has expired, or its role (read, write, admin) is below the one needed.",
        "Use a key of this ladder with the role the route names.",
    ),
    "not-found": (
        "Not found",
        "There is no such ladder, player or game (or no such address).",
        "Check the slug, key or game number; `GET /v1/ladders` lists the ladders.",
    ),
    "method-not-allowed": (
        "Method not allowed",
        "This address does not take this method.",
        "The `Allow` header lists the methods it takes.",
    ),
    "conflict": (
        "Conflict",
        "The request clashes with what is stored: an idempotency key or `external_id` "
        "reused with another body, a key or slug already taken, or a change that would break the log.",
        "The `errors` list names the field; `detail` says what clashes. Retries of the same request "
        "with the same key are fine: they are answered once.",
    ),
    "request-timeout": (
        "Request timeout",
        "The request's body was still arriving when the server's deadline passed (MELO_REQUEST_TIMEOUT).",
        "Send the body at once, as the request starts; nothing was changed, so the request can be sent again.",
    ),
    "payload-too-large": (
        "Payload too large",
        "The body is larger than the server accepts.",
        "Split it (a batch takes at most 1,000 games) or ask the operator about MELO_MAX_BODY_BYTES.",
    ),
    "too-many-requests": (
        "Too many requests",
        "Too many jobs are queued, or too many heavy reads of this ladder (opponent searches, rankings, moments) "
        "are waiting for the server's compute threads, which the ladders share in turn.",
        "Retry after the `Retry-After` header's seconds.",
    ),
    "unavailable": (
        "Service unavailable",
        "The database cannot be reached or is busy, the request took longer "
        "than the server's deadline, or a report could not be computed.",
        "Retry after `Retry-After` seconds; a game post retried with the same `Idempotency-Key` counts "
        "once even if the first attempt was applied.",
    ),
    "internal": (
        "Internal server error",
        "The server failed; the error was logged.",
        "Retry; if it persists, report it with the time of the request.",
    ),
}
