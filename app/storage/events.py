"""The ladders' change log (``ladder_events``): what each transaction changed, for the event stream.

A transaction notes its changes with :func:`add` as it makes them;
:func:`app.storage.ladders.bump`, last before the commit and holding the
ladder's row, writes them with the ladder's new version (:func:`write`), or
one ``ladder`` event if the transaction noted none: every change reaches the
listeners.  Each ladder numbers its own events (``ladders.last_event``) under
that lock, so within a ladder the numbers grow in commit order, ``number >
last`` never skips an event committed later, and a ladder's numbers say
nothing of the others' traffic.
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.storage.sql import bulk_insert, rowcount
from app.storage.tables import LadderEvent, utcnow

#: Events after a given number, oldest first (``?`` placeholders, for :meth:`app.core.db.Database.fetch`).
SINCE = (
    "SELECT number, version, kind, data FROM ladder_events WHERE ladder_id = ? AND number > ? ORDER BY number LIMIT ?"
)
#: The number of the ladder's latest event (0: none yet) and the ladder's version with it (one commit gives out
#: both); whether a number is one of its events (a resume point still kept); and the numbers of up to so many
#: events after one (how far behind a resume point is).
LATEST = "SELECT last_event, version FROM ladders WHERE id = ?"
KEPT = "SELECT 1 FROM ladder_events WHERE ladder_id = ? AND number = ?"
BEHIND = "SELECT count(*) FROM (SELECT 1 FROM ladder_events WHERE ladder_id = ? AND number > ? LIMIT ?) AS kept"


def add(session: Session, ladder_id: int, kind: str, *data: dict) -> None:
    """Note one event of ``kind`` per ``data`` for the ladder, written at :func:`app.storage.ladders.bump`."""
    session.info.setdefault("ladder_events", {}).setdefault(ladder_id, []).extend((kind, d) for d in data)


def noted(session: Session, ladder_id: int, first: list[tuple[str, dict]] | None = None) -> list[tuple[str, dict]]:
    """The events ``first``, then those noted for the ladder by this transaction, taken (one ``ladder`` event if
    none)."""
    return (first or []) + session.info.get("ladder_events", {}).pop(ladder_id, []) or [("ladder", {})]


def write(session: Session, numbered: list[tuple[int, int, list[tuple[str, dict]], int]]) -> None:
    """Write the events of each ladder (ladder id, its new version, events from :func:`noted`, the last number
    they take), in one insert for them all."""
    rows = [
        (ladder_id, number, version, kind, data)
        for ladder_id, version, events, last in numbered
        for number, (kind, data) in enumerate(events, start=last - len(events) + 1)
    ]
    if not rows:
        return
    ladder_ids, numbers, versions, kinds, datas = (list(column) for column in zip(*rows, strict=True))
    columns = {"ladder_id": ladder_ids, "number": numbers, "version": versions, "kind": kinds, "data": datas}
    bulk_insert(session.connection(), LadderEvent.__table__, columns | {"created_at": [utcnow()] * len(rows)})


def parse(data: dict | str) -> dict:
    """A row's ``data`` (PostgreSQL's driver parses JSON columns, SQLite's does not)."""
    return json.loads(data) if isinstance(data, str) else data


def prune(session: Session, before: datetime, limit: int = 10_000) -> int:
    """Delete up to ``limit`` events written before ``before``, oldest first; how many went.  A listener whose
    resume point is gone is told to read everything anew (a ``reset`` event)."""
    oldest = select(LadderEvent.id).where(LadderEvent.created_at < before).order_by(LadderEvent.id).limit(limit)
    return rowcount(session, delete(LadderEvent).where(LadderEvent.id.in_(oldest)))


def scrub(session: Session, ladder_id: int, keys: list[str], pseudonym: str) -> None:
    """Put ``pseudonym`` for ``keys`` in the ladder's player events (an erased person's keys): game events name
    games, whose players are read when the event is sent."""
    rows = session.execute(
        select(LadderEvent.id, LadderEvent.data).where(LadderEvent.ladder_id == ladder_id, LadderEvent.kind == "player")
    ).all()
    gone = set(keys)
    for event_id, data in rows:
        data = parse(data)
        if gone & {data.get(field) for field in ("key", "was", "into")}:
            scrubbed = {field: pseudonym if value in gone else value for field, value in data.items()}
            query = update(LadderEvent).where(LadderEvent.id == event_id, LadderEvent.ladder_id == ladder_id)
            session.execute(query.values(data=scrubbed))
