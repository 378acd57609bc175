"""Opaque page cursors: what a page answers as ``next_cursor`` and takes back as ``cursor``."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from app.core.errors import InvalidInput
from app.core.schemas import MAX_ID

#: The longest cursor taken back (characters): a leaderboard's holds a player key of up to 128 characters, each
#: written as up to 12 in JSON (a surrogate pair's escapes), then in base64 (4 for 3): about 2,300 at most.
MAX_CURSOR = 4096


def encode_cursor(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


def decode_cursor(cursor: str, valid: Callable[[Any], bool]) -> Any:
    """The value of a cursor made by :func:`encode_cursor`; 422 if it is not one or ``valid`` rejects it."""
    try:  # a real cursor is far shorter; a longer one could nest deep enough to exhaust the JSON parser's stack
        value = json.loads(base64.urlsafe_b64decode(cursor.encode())) if len(cursor) <= MAX_CURSOR else None
    except (ValueError, binascii.Error, RecursionError):
        value = None
    if value is None or not valid(value):
        raise InvalidInput("cursor is not a cursor this API returned", errors=[{"field": "cursor"}])
    return value


def is_id(value: Any) -> bool:
    """Whether a cursor's value is a row id (a positive integer in range, not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ID
