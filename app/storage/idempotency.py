"""Idempotency records: the response each idempotency key received, replayed when the request comes again."""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import delete, select, tuple_
from sqlalchemy.orm import Session

from app.storage.sql import bulk_insert, fetch_typed, rowcount
from app.storage.tables import IdempotencyKey

_IDEMPOTENCY = IdempotencyKey.__table__


def stored_response(session: Session, ladder_id: int, key: str) -> tuple[str, dict] | None:
    """(request hash, response) recorded for an idempotency key, or None."""
    sql = "SELECT request_hash, response FROM idempotency_keys WHERE ladder_id = ? AND key = ?"
    rows = fetch_typed(session, sql, (ladder_id, key), [_IDEMPOTENCY.c.request_hash, _IDEMPOTENCY.c.response])
    return rows[0] if rows else None


def remember(session: Session, records: list[tuple[int, str, str, dict]], now: datetime) -> None:
    """Idempotency records (ladder id, key, request hash, response), written with the games they answer."""
    if not records:
        return
    ladder_ids, keys, hashes, responses = (list(column) for column in zip(*records, strict=True))
    columns = {
        "ladder_id": ladder_ids,
        "key": keys,
        "request_hash": hashes,
        "status_code": [201] * len(records),
        "response": responses,
        "created_at": [now] * len(records),
    }
    bulk_insert(session.connection(), _IDEMPOTENCY, columns)


def forget_responses(session: Session, before: datetime, limit: int = 10_000) -> int:
    """Delete up to ``limit`` idempotency records made before ``before``, oldest first; how many went."""
    table = _IDEMPOTENCY
    oldest = select(table.c.ladder_id, table.c.key).where(table.c.created_at < before)
    oldest = oldest.order_by(table.c.created_at).limit(limit)
    return rowcount(session, delete(table).where(tuple_(table.c.ladder_id, table.c.key).in_(oldest)))


def scrub_responses(session: Session, ladder_id: int, old: str, new: str) -> None:
    """Replace a player key in the stored responses of idempotent requests (an erased player's key)."""
    table = _IDEMPOTENCY
    rows = session.execute(select(table.c.key, table.c.response).where(table.c.ladder_id == ladder_id)).all()

    def scrub(value):
        if isinstance(value, dict):
            return {k: (new if k == "key" and v == old else scrub(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    changed = [(row.key, scrub(row.response)) for row in rows if old in json.dumps(row.response)]
    for key, response in changed:
        session.execute(
            table.update().where(table.c.ladder_id == ladder_id, table.c.key == key).values(response=response)
        )
