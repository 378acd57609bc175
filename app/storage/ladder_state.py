"""What a ladder keeps of its whole field beside its settings, on its row: the learned seat advantages and the
running sum of every player's vector (the field whose mean the Elo-equivalent points are measured against).
Both are read and written under the ladder row's lock (:func:`app.storage.ladders.lock`)."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.ladder import LadderRow
from app.rating.seats import Seats
from app.storage import codec
from app.storage.ladders import lock
from app.storage.sql import driver_fetchall
from app.storage.tables import Ladder


def seat_state(session: Session, ladder: LadderRow) -> Seats | None:
    """The ladder's learned seats now (fresh before any game names them), or None if it has none.

    Read it after :func:`~app.storage.ladders.take_seqs` or :func:`~app.storage.ladders.lock` in a write: the
    ladder's row is then locked, so no other writer can move the seats under the transaction."""
    if not ladder.seats:
        return None
    state = session.scalar(select(Ladder.seat_state).where(Ladder.id == ladder.id))
    return seats_from_json(state, ladder)


def save_seat_state(session: Session, ladder_id: int, seats: Seats | None) -> None:
    if seats is not None:
        values = {"seat_state": seats_to_json(seats)}
        session.execute(Ladder.__table__.update().where(Ladder.id == ladder_id).values(**values))


_UNREAD: dict = {}


def field_sum(
    session: Session,
    ladder: LadderRow,
    created: np.ndarray | None = None,
    recount: bool = False,
    kept: dict | None = _UNREAD,
) -> tuple[np.ndarray, int]:
    """The sum of every player's vector and their number, as kept by game commits (``kept``: as
    :func:`~app.storage.ladders.take_seqs` read it, else read here) with the players this transaction
    ``created`` (their vectors) added, or read from the players if it was forgotten (:func:`forget_field`) or
    ``recount``.  Read it in a write after :func:`~app.storage.ladders.take_seqs` (the row is locked)."""
    if recount:
        kept = None
    elif kept is _UNREAD:
        kept = session.scalar(select(Ladder.field_sum).where(Ladder.id == ladder.id))
    if kept is not None:
        total, count = np.array(kept["sum"], dtype=np.float64), int(kept["count"])
        if created is not None and len(created):
            total, count = total + created.sum(axis=0), count + len(created)
        return total, count
    rows = driver_fetchall(session.connection(), "SELECT vector FROM players WHERE ladder_id = ?", (ladder.id,))
    vectors = codec.unpack_rows((row[0] for row in rows), 2 * ladder.k)
    return vectors.sum(axis=0), len(vectors)


def save_field(session: Session, ladder_id: int, total: np.ndarray, count: int) -> None:
    field = {"sum": total.tolist(), "count": count}
    session.execute(Ladder.__table__.update().where(Ladder.id == ladder_id).values(field_sum=field))


def add_to_field(session: Session, ladder: LadderRow, vectors: np.ndarray) -> None:
    """New players outside a game commit: their vectors join the kept field sum (if it is kept), under the
    ladder row's lock, so the next commit need not read every player."""
    move_field(session, ladder.id, vectors.sum(axis=0), len(vectors))


def move_field(session: Session, ladder_id: int, moved: np.ndarray, added: int = 0) -> None:
    """Vectors changed outside a game commit by ``moved`` in all (new - old), and ``added`` players new: the kept
    field sum (if it is kept) follows, under the ladder row's lock, so the next commit need not read every
    player."""
    lock(session, ladder_id)
    kept = session.scalar(select(Ladder.field_sum).where(Ladder.id == ladder_id))
    if kept is not None:
        save_field(session, ladder_id, np.array(kept["sum"], dtype=np.float64) + moved, int(kept["count"]) + added)


def recount_field(session: Session, ladder: LadderRow) -> None:
    """Vectors changed outside a game commit (a replay): the kept sum counted anew from the players, in the same
    transaction, so neither the next commit nor a read of games (whose Elo-equivalent points are against the
    field) has to read every player."""
    total, count = field_sum(session, ladder, recount=True)
    save_field(session, ladder.id, total, count)


def forget_field(session: Session, ladder_id: int) -> None:
    """Vectors changed outside a game commit (a replay, a new player): the next commit sums the players anew."""
    session.execute(Ladder.__table__.update().where(Ladder.id == ladder_id).values(field_sum=None))


def seats_to_json(seats: Seats) -> dict:
    return {"advantage": seats.advantage.tolist(), "information": seats.information.tolist()}


def seats_from_json(state: dict | None, ladder: LadderRow) -> Seats:
    """Seats as stored, or the ladder's before any game (``state`` None)."""
    if state is None:
        return Seats.fresh(len(ladder.seats or []), ladder.seat_precision())
    return Seats.of(state["advantage"], state["information"])
