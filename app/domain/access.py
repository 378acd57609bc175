"""Who may do what to a ladder: finding it for a request and checking the caller's key.

A ladder has keys with roles: ``read`` keys read a private ladder, ``write``
keys also post players and games, ``admin`` keys also manage keys and settings.
The server admin key (``MELO_ADMIN_KEY``) may do everything.  Reads are public
unless the ladder is private; then they need one of its keys too.  Keys are
kept as SHA-256 hashes and compared in constant time (:mod:`app.core.security`); a
revoked or expired key is refused at once.  A key's last use is recorded at
most once a minute per server process.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app import storage
from app.core.errors import Forbidden, InvalidInput, NotFound, Unauthorized
from app.core.ladder import LadderRow
from app.core.security import hash_key
from app.storage.sql import Fetch

#: What each role may do; a role may do what the roles below it may.
RANK = {"read": 0, "write": 1, "admin": 2}


@dataclass(frozen=True)
class Caller:
    """The bearer key a request presented (None: none), and whether it is the server admin key."""

    bearer: str | None
    server_admin: bool = False

    @classmethod
    def of(cls, bearer: str | None, admin_key: str | None) -> Caller:
        is_admin = bool(bearer and admin_key and hmac.compare_digest(hash_key(bearer), hash_key(admin_key)))
        return cls(bearer, is_admin)


def ladder_for_read(session: Session, slug: str, fresh: bool = False) -> LadderRow:
    """The ladder (404 if there is none): from this process's cache, whose id and rating settings never change,
    or as it is now if ``fresh``.  No key check: see :func:`readable`."""
    ladder = storage.ladders.by_slug(session, slug) if fresh else storage.ladders.cached(session, slug)
    if ladder is None:
        raise NotFound(f"There is no ladder {slug!r}.")
    return ladder


def readable(session: Session, slug: str, caller: Caller) -> LadderRow:
    """The ladder as it is now, if the caller may read it."""
    ladder = ladder_for_read(session, slug, fresh=True)
    if ladder.private:
        authorize(session, ladder, caller, "read")
    return ladder


def ladder_for(session: Session, slug: str, caller: Caller, need: str) -> LadderRow:
    """The ladder as it is now, if the caller's key may ``need`` (write or admin) on it: 404, 401 or 403 otherwise."""
    return ladder_and_key(session, slug, caller, need)[0]


def ladder_and_key(session: Session, slug: str, caller: Caller, need: str) -> tuple[LadderRow, str]:
    """:func:`ladder_for`, and the id of the key that allowed it (for audit trails)."""
    ladder = ladder_for_read(session, slug, fresh=True)
    return ladder, authorize(session, ladder, caller, need)


def authorize(session: Session, ladder: LadderRow, caller: Caller, need: str) -> str:
    """The id of the key that allows ``need`` (``"server-admin"`` for the server admin key); 401 or 403 otherwise."""
    if caller.server_admin:
        return "server-admin"
    if not caller.bearer:
        raise Unauthorized("This needs `Authorization: Bearer <key>`.")
    key_id = check(storage.keys.find(session, ladder.id, hash_key(caller.bearer)), need)
    if session.info.get("writing") and storage.keys.due_for_use(session, key_id):
        storage.keys.used(session, ladder.id, key_id)
    return str(key_id)


async def read_key(fetch: Fetch, ladder_id: int, private: bool, caller: Caller) -> tuple[int, datetime | None] | None:
    """The id of the caller's key that lets them read the ladder now, and when it expires (None: they need none,
    the ladder being public or they the server admin); 401 or 403 if they may not read it.  The hot read path's
    check: one statement through ``fetch``."""
    if not private or caller.server_admin:
        return None
    if not caller.bearer:
        raise Unauthorized("This ladder is private: reading it needs `Authorization: Bearer <key>`.")
    key = await storage.keys.find_now(fetch, ladder_id, hash_key(caller.bearer))
    return check(key, "read"), key[3] if key else None


def check(key: tuple[int, str, bool, datetime | None] | None, need: str) -> int:
    """The key's id if ``key`` = (id, role, revoked, expires at) may ``need``; 403 otherwise."""
    if not key:
        raise Forbidden("The key is not a key of this ladder.")
    key_id, role, revoked, expires = key
    if revoked:
        raise Forbidden(f"Key {key_id} was revoked.")
    if expires is not None and expires <= datetime.now(UTC):
        raise Forbidden(f"Key {key_id} expired at {expires.isoformat()}.")
    if RANK[role] < RANK[need]:
        raise Forbidden(f"This needs {_a(need)} key of the ladder; key {key_id} is {_a(role)} key.")
    return key_id


def _a(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"


def check_seats(ladder: LadderRow, wanted: dict[str, str]) -> None:
    """Every seat named in ``wanted`` (field -> seat) is one the ladder has; 422 naming the field otherwise."""
    for name, seat in wanted.items():
        if seat not in (ladder.seats or []):
            known = ", ".join(repr(x) for x in ladder.seats or []) or "none"
            raise InvalidInput(
                f"{name}: this ladder has no seat {seat!r} (its seats: {known})",
                errors=[{"field": name, "message": f"unknown seat {seat!r}"}],
            )
