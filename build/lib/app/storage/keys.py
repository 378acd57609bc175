"""A ladder's API keys: hashes, names, roles, revocation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.models import ApiKey
from app.storage.sql import Fetch


@dataclass(frozen=True)
class KeyRow:
    id: int
    ladder_id: int
    name: str
    role: str
    created_at: datetime
    revoked_at: datetime | None


_COLUMNS = (ApiKey.id, ApiKey.ladder_id, ApiKey.name, ApiKey.role, ApiKey.created_at, ApiKey.revoked_at)


def insert(session: Session, ladder_id: int, name: str, role: str, key_hash: str) -> KeyRow:
    key = ApiKey(ladder_id=ladder_id, name=name, role=role, key_hash=key_hash)
    session.add(key)
    session.flush()
    return KeyRow(key.id, ladder_id, name, role, key.created_at, None)


def find(session: Session, ladder_id: int, key_hash: str) -> KeyRow | None:
    """The key with this hash, revoked or not."""
    row = session.execute(select(*_COLUMNS).where(ApiKey.ladder_id == ladder_id, ApiKey.key_hash == key_hash)).first()
    return None if row is None else KeyRow(*row)


async def find_now(fetch: Fetch, ladder_id: int, key_hash: str) -> tuple[int, str, bool] | None:
    """(id, role, revoked) of the key with this hash: the hot read path's check."""
    sql = "SELECT id, role, revoked_at FROM api_keys WHERE ladder_id = ? AND key_hash = ?"
    rows = await fetch(sql, (ladder_id, key_hash))
    return (rows[0][0], rows[0][1], rows[0][2] is not None) if rows else None


def all_keys(session: Session, ladder_id: int) -> list[KeyRow]:
    return [
        KeyRow(*row)
        for row in session.execute(select(*_COLUMNS).where(ApiKey.ladder_id == ladder_id).order_by(ApiKey.id))
    ]


def revoke(session: Session, ladder_id: int, key_id: int) -> KeyRow | None:
    """Revoke a key now (a revoked key stays revoked); None if the ladder has no such key."""
    session.execute(
        update(ApiKey)
        .where(ApiKey.ladder_id == ladder_id, ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC))
    )
    row = session.execute(select(*_COLUMNS).where(ApiKey.ladder_id == ladder_id, ApiKey.id == key_id)).first()
    return None if row is None else KeyRow(*row)
