"""The service's problems (RFC 9457 problem+json) as exceptions: one class per kind of answer a caller handles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass(frozen=True)
class FieldError:
    """One input the service refused: where (``sides[1].players``) and why, in words."""

    field: str
    message: str


@dataclass(frozen=True)
class Problem:
    """The problem document the service answered with."""

    status: int
    title: str
    detail: str
    type: str = "about:blank"
    errors: list[FieldError] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, response: httpx.Response) -> Problem:
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):  # not a problem document (a proxy's page): what the status says
            return cls(response.status_code, response.reason_phrase, response.text[:500])
        errors = [
            FieldError(str(e.get("field", "body")), str(e.get("message", "")))
            for e in body.get("errors") or []
            if isinstance(e, dict)
        ]
        return cls(
            status=response.status_code,
            title=str(body.get("title", response.reason_phrase)),
            detail=str(body.get("detail", "")),
            type=str(body.get("type", "about:blank")),
            errors=errors,
            raw=body,
        )


class MeloError(Exception):
    """Any error answer of the service; ``problem`` holds what it said (None: it could not be reached)."""

    def __init__(self, message: str, problem: Problem | None = None) -> None:
        super().__init__(message)
        self.problem = problem


class InvalidInput(MeloError):
    """422 (or 400, 413): the request was refused as it stands; ``errors`` names each field and why."""

    @property
    def errors(self) -> list[FieldError]:
        return self.problem.errors if self.problem else []


class Unauthorized(MeloError):
    """401: no key, or a key the service does not know."""


class Forbidden(Unauthorized):
    """403: the key is known but may not do this (a read key posting, another ladder's key)."""


class NotFound(MeloError):
    """404: no such ladder, player, game or refit."""


class Conflict(MeloError):
    """409: it cannot be done in the ladder's present state (a slug taken, a merge into oneself, a refit out of
    date); ``errors`` names the fields."""

    @property
    def errors(self) -> list[FieldError]:
        return self.problem.errors if self.problem else []


class Unavailable(MeloError):
    """503 or 429 still answered after the retries, or the service could not be reached at all."""


class TooManyRequests(Unavailable):
    """429: too many jobs queued (refits); try again later."""


_BY_STATUS: dict[int, type[MeloError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: InvalidInput,
    422: InvalidInput,
    429: TooManyRequests,
    503: Unavailable,
}


def error_for(response: httpx.Response) -> MeloError:
    """The exception for an error answer."""
    problem = Problem.of(response)
    kind = _BY_STATUS.get(response.status_code, MeloError)
    message = f"{problem.status} {problem.title}" + (f": {problem.detail}" if problem.detail else "")
    return kind(message, problem)
