"""Request dependencies: the database of the running app, its settings and the presented bearer key."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.config import Settings
from app.db import Database
from app.errors import Unauthorized


async def get_db(request: Request) -> Database:
    return request.app.state.db


async def get_app_settings(request: Request) -> Settings:
    return request.app.state.settings


bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <key>`")


async def bearer_key(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> str:
    """The presented bearer key; 401 when there is none."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("This endpoint needs `Authorization: Bearer <key>`.")
    return credentials.credentials


DatabaseDep = Annotated[Database, Depends(get_db)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
BearerKey = Annotated[str, Depends(bearer_key)]
