"""Voiding a game: it stays in the log and counts nowhere; the games after it are replayed."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.core.errors import NotFound
from app.core.ladder import LadderRow
from app.domain.rerating import Prepared, holds, lock_ladder, replay_from, replay_log, write_prepared
from app.games.answers import field_mean, stored_body


def void_game(
    session: Session, ladder: LadderRow, number: int, by: str, reason: str | None, prepared: Prepared | None = None
) -> dict:
    """Void game ``number`` and answer it as stored; voiding a voided game changes nothing.

    The later games its players reach are replayed exactly from their state before it, so the ratings equal
    those of a ladder that never received it (``/audit`` checks it).  Checkpoints that saw it are superseded; if
    there were any, the ratings came through one, and the whole log is replayed from the latest checkpoint left.

    With ``prepared`` (:func:`app.domain.rerating.prepared_void`: that replay made and written ahead before this
    transaction, holding no lock), only the games committed since are replayed here; one that no longer holds
    (the log changed below its last game) is dropped and the replay done here.
    """
    record = storage.games.get(session, ladder.id, number)
    if record is None:
        raise NotFound(f"There is no game {number} in ladder {ladder.slug!r}.")
    if record.voided_at is not None:
        return stored_body(record, field_mean(session, ladder))
    lock_ladder(session, ladder.id, prepared)
    # Read again under the locks: a merge, void or applied refit that held them meanwhile may have rewritten
    # the game (its members, its seats' state before it), or voided it.
    record = storage.games.get(session, ladder.id, number)
    assert record is not None  # found above, and a game is never deleted (a void keeps it in the log)
    ladder = storage.ladders.by_id(session, ladder.id) or ladder  # as it is under the locks (a merge meanwhile)
    usable = prepared is not None and prepared.left_out == record.id and holds(session, ladder, prepared)
    if prepared is not None and prepared.rewrite is not None and not usable:
        replay_log(session, ladder)  # what it wrote ahead, back to the log's
    if record.voided_at is not None:
        return stored_body(record, field_mean(session, ladder))
    game_id = record.id
    now = datetime.now(UTC)
    storage.games.void(session, ladder.id, game_id, by, reason, now)
    # Its share of what the draw model is fitted on comes off too (each side's scores, from its first member).
    sides = [next(m for m in record.members if m.side == s) for s in range(len(record.payload["sides"]))]
    actual, expected = (np.array([getattr(m, name) for m in sides]) for name in ("actual_score", "expected_score"))
    draws, room = rating.two_sided_draws(np.array([0, len(sides)]), actual, expected)
    compared = len(sides) * (len(sides) - 1) // 2
    storage.ladders.add_counts(session, ladder.id, games=-1, comparisons=-compared, draws=-draws, draw_room=-room)
    superseded = storage.refits.supersede_checkpoints(session, ladder.id, game_id)
    storage.seasons.mark_changed(session, ladder.id, [game_id], now)  # its season's archive stays as it was
    # Its record comes off its players' counters (it depends on the outcome only, not on the vectors).
    members = [m.player_id for m in record.members]
    shares = np.array([m.actual_score for m in record.members])
    record_of = rating.record(shares, np.full(len(shares), len(record.payload["sides"])))
    storage.players.uncount(session, ladder.id, members, record_of)
    storage.players.refresh_last_played(session, ladder.id, members)
    if superseded:  # players the tail does not reach hold that checkpoint's vectors: replay from the one before
        replay_log(session, ladder)
    elif usable:
        assert prepared is not None
        write_prepared(session, ladder, prepared)
    else:
        replay_from(session, ladder, game_id + 1, [m.key for m in record.members], record.seat_state)
    storage.events.add(session, ladder.id, "void", {"game": number})
    storage.ladders.bump(session, [ladder.id])
    voided = storage.games.get(session, ladder.id, number)
    assert voided is not None  # the game just voided
    return stored_body(voided, field_mean(session, ladder))
