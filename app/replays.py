"""Replaying the log after it changed below its end (an applied refit, a voided game, merged players),
shared by the domains.

After a change at one game (a void, a merge), only what the change can reach
is replayed: the games from the changed one on that share a player with it,
directly or through earlier such games, each reached player starting from its
stored state just before its first such game (the vector after its previous
game, or the latest checkpoint that still holds).  Every other game and rating
is untouched by the change, so the result equals, bit for bit, a replay of the
whole log, and undoing the latest game costs a few rows, not the log.  Every
membership of a replayed game gets its new vectors and expected score, so the
history, ``/audit`` and the ratings agree again.

The caller holds :func:`app.storage.players.lock_all` (every player row, then
the ladder's row) from before it reads anything of the log: no game commits
between what a replay reads and what it writes, not even a game between players
new to the ladder, which waits for the ladder's row before it reads the seats.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.storage.ladders import LadderRow
from app.storage.log import LadderLog, Tail


def replay_from(
    session: Session,
    ladder: LadderRow,
    first_game_id: int,
    changed: Sequence[str],
    changed_seats: dict[str, list[float]] | None = None,
) -> int:
    """Replay the games from ``first_game_id`` on that the players ``changed`` (and the seats ``changed_seats``,
    from the state given) reach, rewrite their history and the reached players' vectors and seats; the number of
    games replayed."""
    tail = storage.log.read_tail(session, ladder, first_game_id, changed, changed_seats)
    return _replay(session, ladder, tail)


def replay_log(session: Session, ladder: LadderRow) -> int:
    """Replay every game after the latest checkpoint (one just applied), rewrite their history and every
    player's vector; the number of games replayed."""
    return _replay(session, ladder, storage.log.read(session, ladder))


def _replay(session: Session, ladder: LadderRow, part: Tail | LadderLog) -> int:
    seats = part.start_seats
    history = rating.replay_history(part.start, part.log, ladder.learning_rate(), games0=part.start_games, seats=seats)
    storage.players.save_vectors(session, part.player_ids, history.C)
    storage.ladders.recount_field(session, ladder)
    if seats is not None:
        storage.ladders.save_seat_state(session, ladder.id, history.seats)
        states = storage.games.seat_states(part.log, history, ladder.seats or [])
        storage.games.rewrite_seat_states(session, part.game_ids.tolist(), states)
    member_game = np.repeat(part.game_ids, np.diff(part.log.member_ptr))
    storage.games.rewrite_history(
        session,
        member_game,
        part.player_ids[part.log.member_player],
        history.before,
        history.after,
        history.actual[part.log.member_side],
        history.expected[part.log.member_side],
    )
    return part.log.n_games
