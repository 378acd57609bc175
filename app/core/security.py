"""API keys: random tokens shown once, stored as SHA-256 hashes, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_key() -> str:
    return "mk_" + secrets.token_urlsafe(24)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_matches(presented: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(presented), stored_hash)


#: The shortest server admin key not called weak, and words of the placeholders in the docs and .env.example.
MIN_ADMIN_KEY = 20
PLACEHOLDERS = ("change-me", "changeme", "password", "secret", "admin")


def weakness(key: str) -> str | None:
    """Why ``key`` is too weak for the server admin key (a placeholder, short, one repeated character), or None."""
    if any(word in key.lower() for word in PLACEHOLDERS):
        return "it looks like a placeholder"
    if len(key) < MIN_ADMIN_KEY:
        return f"it is shorter than {MIN_ADMIN_KEY} characters"
    if len(set(key)) < 5:
        return "it repeats a few characters"
    return None
