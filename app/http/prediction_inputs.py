"""What a prediction reads, one statement each: players' vectors and the ladder's draw share, and the learned
advantages of seats."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from starlette.requests import Request

from app import storage
from app.core.db import Database
from app.core.errors import InvalidInput
from app.core.ladder import LadderRow
from app.domain.access import check_seats
from app.domain.player_keys import players_named
from app.http.offload import compute
from app.storage import ladder_reads


class Vectors(NamedTuple):
    """Players' rows as the prediction paths read them (:func:`vectors`)."""

    version: int
    C: np.ndarray
    known: list[bool]
    #: The ladder's fitted draw share ν (:func:`app.rating.draw_share`; None: it has seen no draw).
    draw_share: float | None


#: At most this many new players' initial vectors are drawn on the event loop; more, in the compute thread.
NEW_HERE = 64


async def vectors(db: Database, ladder: LadderRow, keys: list[str], request: Request | None = None) -> Vectors:
    """The ladder version they were read at, the rows of ``keys`` (in that order), whether each names a
    player, and the ladder's draw share; a key that names none yet gets the initial vector the ladder would give
    them (more than ``NEW_HERE`` of them in the compute thread, given the ``request``).  Keys are matched as the
    ladder matches them (case-folded, through its aliases); two spellings of one player are a 422."""
    players = _players(ladder, keys)
    now, found = await storage.players.vectors(db.fetch, ladder.id, players, 2 * ladder.k)
    known = [p in found for p in players]
    if not all(known):
        new = [p for p in players if p not in found]
        if request is not None and len(new) > NEW_HERE:
            drawn = await compute(request, ladder.initial_vectors, new)
        else:
            drawn = ladder.initial_vectors(new)
        found |= dict(zip(new, drawn, strict=True))
    return Vectors(now[0] if now else 0, np.array([found[p] for p in players]), known, now[3] if now else None)


async def public_vectors(db: Database, slug: str, keys: list[str]) -> Vectors | None:
    """What :func:`vectors` answers, in one statement, if this process knows the ladder, it is
    public, none of its settings changed since, and every key names a player (the prediction path); else None,
    and :func:`app.http.ladder_access.ladder` then :func:`vectors` answer, as they check it."""
    found = storage.ladders.from_cache(db.read_engine, slug)
    if found is None:
        return None
    try:
        players = _players(found, keys)
    except InvalidInput:  # said after the ladder's access is checked
        return None
    now, rows = await storage.players.vectors(db.fetch, found.id, players, 2 * found.k)
    if now is None or now[1] or now[2] > found.reset_version or not all(p in rows for p in players):
        return None
    return Vectors(now[0], np.array([rows[p] for p in players]), [True] * len(keys), now[3])


def _players(ladder: LadderRow, keys: list[str]) -> list[str]:
    """The players ``keys`` name, as the ladder matches keys (case-folded, through its aliases); a 422 if two
    spellings name one player."""
    if not ladder.case_insensitive_keys and not ladder.aliases:
        return keys
    players, named = [], players_named(ladder, keys)
    for k in keys:
        _, p, first = next(named)
        if first != k:
            message = f"{first!r} and {k!r} are one player, {p!r}"
            raise InvalidInput(message, errors=[{"field": "players", "message": message}])
        players.append(p)
    return players


async def seat_advantages(db: Database, ladder: LadderRow, wanted: dict[str, str]) -> dict[str, float]:
    """The learned advantage (logits) of each seat named in ``wanted`` (field -> seat); 422 naming the field of
    a seat the ladder does not have."""
    check_seats(ladder, wanted)
    if not wanted:
        return {}
    seats = await ladder_reads.seats(db.fetch, ladder)
    return dict(zip(ladder.seats or [], seats.advantage.tolist(), strict=True))
