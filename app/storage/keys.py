"""A ladder's API keys: hashes, names, roles, expiry, revocation, and when each was last used."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.storage import cache
from app.storage.sql import Fetch, driver_fetchall
from app.storage.tables import ApiKey

#: A key's ``last_used_at`` is written at most this often (seconds) per key and server process.
USE_EVERY = 60.0


@dataclass(frozen=True)
class KeyRow:
    id: int
    ladder_id: int
    name: str
    role: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None
    expires_at: datetime | None


_COLUMNS = (
    ApiKey.id,
    ApiKey.ladder_id,
    ApiKey.name,
    ApiKey.role,
    ApiKey.created_at,
    ApiKey.revoked_at,
    ApiKey.last_used_at,
    ApiKey.expires_at,
)


def insert(
    session: Session, ladder_id: int, name: str, role: str, key_hash: str, expires_at: datetime | None = None
) -> KeyRow:
    key = ApiKey(ladder_id=ladder_id, name=name, role=role, key_hash=key_hash, expires_at=expires_at)
    session.add(key)
    session.flush()
    return KeyRow(key.id, ladder_id, name, role, key.created_at, None, None, expires_at)


#: (id, role, revoked at, expires at) of a ladder's key by its hash: what a request's check needs.
_CHECK = "SELECT id, role, revoked_at, expires_at FROM api_keys WHERE ladder_id = ? AND key_hash = ?"


def find(session: Session, ladder_id: int, key_hash: str) -> tuple[int, str, bool, datetime | None] | None:
    """(id, role, revoked, expires at) of the key with this hash, revoked or not: a write's check (one statement
    through the driver, once per ladder and key in each group commit)."""
    rows = driver_fetchall(session.connection(), _CHECK, (ladder_id, key_hash))
    return _checked(rows)


async def find_now(fetch: Fetch, ladder_id: int, key_hash: str) -> tuple[int, str, bool, datetime | None] | None:
    """(id, role, revoked, expires at) of the key with this hash: the hot read path's check."""
    return _checked(await fetch(_CHECK, (ladder_id, key_hash)))


def _checked(rows: list) -> tuple[int, str, bool, datetime | None] | None:
    if not rows:
        return None
    key_id, role, revoked, expires = rows[0]
    return key_id, role, revoked is not None, _moment(expires)


def _moment(value: datetime | str | None) -> datetime | None:
    """A time as the driver gives it (SQLite: text in UTC), timezone-aware."""
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def page_of_keys(session: Session, ladder_id: int, limit: int | None, after: int | None) -> list[KeyRow]:
    """Up to ``limit`` (None: all) of the ladder's keys in id order, after the key ``after``."""
    query = select(*_COLUMNS).where(ApiKey.ladder_id == ladder_id, ApiKey.id > (after or 0))
    return [KeyRow(*row) for row in session.execute(query.order_by(ApiKey.id).limit(limit))]


def get(session: Session, ladder_id: int, key_id: int) -> KeyRow | None:
    row = session.execute(select(*_COLUMNS).where(ApiKey.ladder_id == ladder_id, ApiKey.id == key_id)).first()
    return None if row is None else KeyRow(*row)


def admins_left(session: Session, ladder_id: int, now: datetime) -> int:
    """How many admin keys of the ladder still work (neither revoked nor expired)."""
    alive = (ApiKey.expires_at.is_(None)) | (ApiKey.expires_at > now)
    query = select(func.count()).where(
        ApiKey.ladder_id == ladder_id, ApiKey.role == "admin", ApiKey.revoked_at.is_(None), alive
    )
    return session.scalar(query) or 0


def revoke(session: Session, ladder_id: int, key_id: int) -> KeyRow | None:
    """Revoke a key now (a revoked key stays revoked); None if the ladder has no such key."""
    session.execute(
        update(ApiKey)
        .where(ApiKey.ladder_id == ladder_id, ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )
    return get(session, ladder_id, key_id)


def due_for_use(source, key_id: int) -> bool:
    """Whether this process should write key ``key_id``'s ``last_used_at`` now (at most every
    :data:`USE_EVERY` seconds); if so, it counts as written."""
    written = cache.of(source, "key_use")
    now = time.monotonic()
    if now - written.get(key_id, -USE_EVERY) < USE_EVERY:
        return False
    if len(written) >= 65_536:
        written.clear()
    written[key_id] = now
    return True


def used(session: Session, ladder_id: int, key_id: int) -> None:
    """Record that the ladder's key ``key_id`` was used now."""
    query = update(ApiKey).where(ApiKey.id == key_id, ApiKey.ladder_id == ladder_id)
    session.execute(query.values(last_used_at=datetime.now(UTC)))
