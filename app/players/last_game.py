"""The change a player's own last game made to their rating (``last_game_change``), read from the log: what the
game did, apart from how others' games moved them since (``change_since_last_game``)."""

from __future__ import annotations

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.ladder import LadderRow
from app.players.records import mean_vector
from app.storage.read_model import Table


def last_game_changes(
    session: Session, ladder: LadderRow, table: Table, rows: list[int], through: int | None = None
) -> list[float | None]:
    """For each of the players ``rows`` (of ``table``), the ``elo_change`` their newest game that counts (at or
    before game id ``through``, if given) shows in their history: as its post answered, or where a replay
    rewrote it since, Elo-equivalent points after it minus before it, both against the field of ``table``; None
    for a player without one."""
    ids = [int(table.ids[n]) for n in rows]
    found = storage.games.last_vectors(session, ladder.id, ids, through)
    field_mean = mean_vector(table)
    out: list[float | None] = []
    for player_id in ids:
        last = found.get(player_id)
        if last is not None and last[2] is not None:
            out.append(last[2])
            continue
        if last is None or len(last[0]) != len(field_mean):  # none yet, or k changed since it was read
            out.append(None)
            continue
        elo_before, elo_after = rating.elo_equivalent(
            rating.hodge_strength_against(np.array(last[:2]), field_mean)
        ).tolist()
        out.append(elo_after - elo_before)
    return out
