"""API keys: random tokens shown once, stored as SHA-256 hashes, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.errors import Forbidden, Unauthorized

bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <key>`")


def new_key() -> str:
    return "mk_" + secrets.token_urlsafe(24)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_matches(presented: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(presented), stored_hash)


def bearer_key(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> str:
    """The presented bearer key; 401 when there is none."""
    if credentials is None or not credentials.credentials:
        raise Unauthorized("This endpoint needs `Authorization: Bearer <key>`.")
    return credentials.credentials


BearerKey = Annotated[str, Depends(bearer_key)]


def require(presented: str, stored_hash: str | None, what: str) -> None:
    if stored_hash is None or not key_matches(presented, stored_hash):
        raise Forbidden(f"The key is not the {what}.")
