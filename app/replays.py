"""Replaying the log after it changed below its end (a voided game, merged players), shared by the domains.

The ratings are replayed exactly from the latest checkpoint that still holds
(the caller supersedes those that saw the change), and every membership of a
game from ``first_game_id`` on gets its new vectors and expected score, so the
history, ``/audit`` and the ratings agree again.
"""

from __future__ import annotations

import numpy as np
from sqlalchemy.orm import Session

from app import rating, storage
from app.storage.ladders import LadderRow


def replay_from(session: Session, ladder: LadderRow, first_game_id: int) -> None:
    """Replay the ladder's log and rewrite the history of the games from ``first_game_id`` on."""
    state = storage.log.read(session, ladder)
    history = rating.replay_history(state.start, state.log, ladder.learning_rate(), games0=state.start_games)
    storage.players.save_vectors(session, state.player_ids, history.C)
    member_game = np.repeat(state.game_ids, np.diff(state.log.member_ptr))
    changed = member_game >= first_game_id
    storage.games.rewrite_history(
        session,
        member_game[changed],
        state.player_ids[state.log.member_player][changed],
        history.before[changed],
        history.after[changed],
        history.actual[state.log.member_side][changed],
        history.expected[state.log.member_side][changed],
    )
