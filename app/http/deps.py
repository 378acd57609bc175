"""Request dependencies: the database of the running app, its settings and the caller's bearer key."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.core.config import Settings
from app.core.db import Database
from app.core.errors import InvalidInput
from app.core.schemas import MAX_ID
from app.domain.access import Caller


async def get_db(request: Request) -> Database:
    return request.app.state.db


async def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <key>`")


async def caller(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Caller:
    """The presented bearer key, if any (reads of public ladders need none; the routes say what they need)."""
    presented = credentials.credentials if credentials is not None and credentials.credentials else None
    return Caller.of(presented, request.app.state.settings.admin_key)


#: The query parameters each route takes (by the route's identity: routes live as long as the process), found on
#: its first request.
_taken: dict[int, frozenset[str]] = {}


async def known_query(request: Request) -> None:
    """A 422 naming the query parameters an API route does not take: a misspelt filter would otherwise be ignored
    and answer as if none were given."""
    if not request.scope["query_string"] or not request.scope["path"].startswith("/v1/"):
        return
    route = request.scope["route"]
    if (taken := _taken.get(id(route))) is None:
        taken = _taken[id(route)] = frozenset(_query_names(route.dependant))
    unknown = sorted(set(request.query_params) - taken)
    if unknown:
        offer = f"it takes {', '.join(sorted(taken))}" if taken else "it takes none"
        errors = [{"field": name, "message": f"not a query parameter of this route ({offer})"} for name in unknown]
        raise InvalidInput("; ".join(f"{e['field']}: {e['message']}" for e in errors), errors=errors)


def _query_names(dependant) -> list[str]:
    """The query parameters a route's function and its dependencies take."""
    return [p.alias for p in dependant.query_params] + [n for d in dependant.dependencies for n in _query_names(d)]


DatabaseDep = Annotated[Database, Depends(get_db)]
CallerDep = Annotated[Caller, Depends(caller)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
#: An id in a path: a whole number the databases can store (larger ones are a 422, not a 500).
IdPath = Annotated[int, Path(ge=1, le=MAX_ID)]
#: A ladder version the client has seen: reads served by replicas never answer an older one.
MinVersion = Annotated[
    int | None,
    Query(
        ge=0,
        le=MAX_ID,
        description="A ladder version this client has seen (an answer's `ladder_version`, or its ETag): the answer "
        "is never older. It matters where replicas serve reads (`MELO_READ_DATABASE_URL`): one that has not "
        "reached it yet is waited for briefly, then the primary answers. `If-None-Match` names a version too. A "
        "version the ladder has not reached is a 422.",
    ),
]
#: A page's size, and the cursor of a list paged by row id.
#: The largest page a list answers.
MAX_PAGE = 500
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Page size.")]
IdCursor = Annotated[int | None, Query(ge=1, le=MAX_ID, description="`next_cursor` of the previous page.")]
