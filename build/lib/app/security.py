"""API keys: random tokens shown once, stored as SHA-256 hashes, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from app.errors import Forbidden


def new_key() -> str:
    return "mk_" + secrets.token_urlsafe(24)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_matches(presented: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(presented), stored_hash)


def require(presented: str, stored_hash: str | None, what: str) -> None:
    if stored_hash is None or not key_matches(presented, stored_hash):
        raise Forbidden(f"The key is not the {what}.")
