"""One ladder's reads on the event loop (:data:`app.storage.sql.Fetch`): its learned seats, its game count, and
its players changed since a version."""

from __future__ import annotations

import json

from app.core.ladder import LadderRow
from app.rating.seats import Seats
from app.storage import read_model
from app.storage.ladder_state import seats_from_json
from app.storage.sql import Fetch


async def seats(fetch: Fetch, ladder: LadderRow) -> Seats:
    """The ladder's learned seats as they are now (as they stand before any game if it has none yet)."""
    rows = await fetch("SELECT seat_state FROM ladders WHERE id = ?", (ladder.id,))
    state = rows[0][0] if rows else None
    state = json.loads(state) if isinstance(state, str | bytes) else state
    return seats_from_json(state, ladder)


async def games_count(fetch: Fetch, ladder_id: int) -> int | None:
    """How many games the ladder has (None: there is no such ladder)."""
    rows = await fetch("SELECT games_count FROM ladders WHERE id = ?", (ladder_id,))
    return rows[0][0] if rows else None


async def changed_players(fetch: Fetch, ladder_id: int, since: int, limit: int) -> list[tuple]:
    """Up to ``limit`` rows of :data:`app.storage.read_model.CHANGED`: the ladder's players changed after version
    ``since``, in id order."""
    return await fetch(read_model.CHANGED + " LIMIT ?", (ladder_id, since, limit))
