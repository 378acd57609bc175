"""Domain errors as RFC 9457 problems (``app.handlers`` turns them into HTTP responses)."""

from __future__ import annotations

from typing import Any

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "https://melo.example/problems/"


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


class TooManyRequests(Problem):
    status, title, slug = 429, "Too many requests", "too-many-requests"


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
        413: "Body too large",
        429: "Too many jobs queued; retry after `Retry-After` seconds",
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
