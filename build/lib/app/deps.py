"""Request dependencies: the database of the running app, its settings and the caller's bearer key."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.access import Caller
from app.config import Settings
from app.db import Database
from app.schemas import MAX_ID


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


DatabaseDep = Annotated[Database, Depends(get_db)]
CallerDep = Annotated[Caller, Depends(caller)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
#: An id in a path: a whole number the databases can store (larger ones are a 422, not a 500).
IdPath = Annotated[int, Path(ge=1, le=MAX_ID)]
