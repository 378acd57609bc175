"""Matchmaking: whom a player should play next, for even chances or to become comparable (mathematics §7, §10)."""

from __future__ import annotations

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.players.records import is_listed, listed_rows, row_of
from app.rating.identifiability import Results, comparing_opponents
from app.rating.model import omega_apply
from app.storage.ladders import LadderRow
from app.storage.read_model import Table

#: Opponents are suggested from the best this many (later pages of the list end there).
MAX_OPPONENTS = 1000


def opponents_page(session: Session, ladder: LadderRow, key: str, limit: int, offset: int, purpose: str) -> dict:
    """The page of :func:`opponents` after the first ``offset`` (a page's cursor is where the next starts)."""
    end = min(offset + limit, MAX_OPPONENTS)
    found = opponents(session, ladder, key, end + 1, purpose)
    more = len(found) > end and end < MAX_OPPONENTS
    return {"items": found[offset:end], "next_cursor": str(end) if more else None}


def opponents(session: Session, ladder: LadderRow, key: str, limit: int, purpose: str = "balanced") -> list[dict]:
    """The players against whom ``key`` has the most even chances (mathematics §7), or, for ``purpose="comparable"``,
    those whose games would best make a player who is not yet comparable comparable (mathematics §10)."""
    table = storage.read_model.current_table(session, ladder)
    i = row_of(table, ladder, key)
    if purpose == "comparable":
        found = _comparing(session, ladder, table, is_listed(table, ladder), i, limit)
        if found is not None:
            return found
    active = listed_rows(table, ladder)  # inactive players are not suggested
    best = rating.balanced_opponents(table.C, i, limit=limit, candidates=active) if len(table.keys) > 1 else []
    probs = rating.pair_probability(table.C, np.full(len(best), i), np.asarray(best, dtype=int))
    return [
        {"key": table.keys[j], "name": table.names[j], "probability": float(p), "gain": None}
        for j, p in zip(np.asarray(best, dtype=int).tolist(), probs.tolist(), strict=True)
    ]


def _comparing(
    session: Session, ladder: LadderRow, table: Table, listed: np.ndarray, i: int, limit: int
) -> list[dict] | None:
    """Opponents along the witness direction of player ``i``'s results; None if they are comparable already."""
    played = storage.games.of_player_all(session, ladder.id, int(table.ids[i]))
    games = [payload for _, payload, voided in played if not voided]
    W = np.zeros((table.C.shape[1], 0))
    if games:
        log = storage.log.encode(games, {key: n for n, key in enumerate(table.keys.tolist())}, ladder.seat_index())
        W = Results.of(log).directions(omega_apply(table.C), i)
    found = comparing_opponents(table.C, i, W, limit, among=listed)
    if found is None:
        return None
    best, gain = found
    probs = rating.pair_probability(table.C, np.full(len(best), i), best)
    return [
        {"key": table.keys[j], "name": table.names[j], "probability": float(p), "gain": float(g)}
        for j, p, g in zip(best.tolist(), probs.tolist(), gain.tolist(), strict=True)
    ]
