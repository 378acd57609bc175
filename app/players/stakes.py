"""What is at stake in a game: the Elo-equivalent points a player would gain by beating each opponent in a singles
game now, and lose by losing it, by the ladder's own update rule (mathematics §3-§6)."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from app import rating, storage
from app.core.ladder import LadderRow
from app.players.records import mean_vector, variances
from app.rating.model import omega_apply, rowdot
from app.storage.read_model import Table


def stakes(
    table: Table, ladder: LadderRow, i: int, opponents: np.ndarray, now: datetime
) -> tuple[np.ndarray, np.ndarray]:
    """The change of player ``i``'s Elo-equivalent rating if they won, and if they lost, a singles game against
    each of ``opponents`` (rows of ``table``) played at ``now``.

    Each game is what a post of it would apply (:func:`app.games.apply.apply_games`): the same replay step from
    today's vectors, experience and time away, and the same measure as the post's answer shows, ``elo_change``:
    the player's strength after the game minus before it, both against the field's mean vector after it.  The
    2·len(opponents) games are independent copies of the two players, so one vectorised step applies them all.
    """
    m = len(opponents)
    if m == 0:
        return np.zeros(0), np.zeros(0)
    rows = np.empty(4 * m, dtype=np.int64)  # game g: rows 2g (the player) and 2g + 1 (the opponent)
    rows[0::2] = i
    rows[1::2] = np.concatenate([opponents, opponents])
    C0 = table.C[rows]
    me, them = np.arange(0, 4 * m, 2), np.arange(1, 4 * m, 2)
    won = np.concatenate([np.ones(m), np.zeros(m)])  # the first m games won, the others lost
    log = rating.GameLog.from_pairs(me, them, won, np.zeros(2 * m))
    rate, times = ladder.learning_rate(), None
    if rate.drift > 0:  # the steps wear with the time away, counted in days as a post counts them
        today = storage.codec.day_years(np.array([storage.codec.micros(now)]))
        times = (np.repeat(today, 2 * m), storage.codec.day_years(table.last_played[rows]))
    # The state the rule carries: under the variance rule, the variances (mathematics §3b).
    state = variances(table, rate)[rows] if isinstance(rate, rating.VarianceRule) else table.experience[rows]
    history = rating.replay_history(C0, log, rate, games0=state, times=times)
    moved = history.C - C0
    field = (mean_vector(table) * len(table.C) + moved[me] + moved[them]) / max(len(table.C), 1)
    change = rowdot(moved[me], omega_apply(field)) * rating.ELO_PER_LOGIT
    return change[:m], change[m:]
