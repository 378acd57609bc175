"""The auto-refit guard (mathematics §9): would a refit have predicted the latest games better than the online
forecasts the ladder served?"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog
from app.rating.refit.fit import Progress
from app.rating.refit.metrics import Metrics
from app.rating.refit.pipeline import RefitOptions, refit
from app.rating.refit.prior import L2
from app.rating.replay import Times, member_experience, replay_history
from app.rating.seats import SEAT_PRIOR_PRECISION, Seats
from app.rating.update import LearningRate
from app.rating.variance import VarianceRule

#: Auto refits compare predictions on at most this fraction of the log, its latest games.
GUARD_WINDOW = 0.2


def guard_window(n_games: int, since_checkpoint: int) -> int:
    """Games :func:`guard` compares on: the latest GUARD_WINDOW of the log, none from before the last checkpoint."""
    return min(since_checkpoint, int(GUARD_WINDOW * n_games))


@dataclass(frozen=True)
class Guard:
    """The verdict of :func:`guard`: log losses of both forecasts of the window's pair terms."""

    better: bool
    k: int
    window_games: int
    refit_log_loss: float
    online_log_loss: float


def guard(
    log: GameLog,
    start: ArrayLike,
    window: int,
    online_p: ArrayLike,
    rate: LearningRate | VarianceRule,
    k: int,
    select_k: list[int] | None = None,
    l2: float | None = L2,
    seed: int = 0,
    progress: Progress = None,
    times: Times = None,
    seat_precision: float = SEAT_PRIOR_PRECISION,
) -> Guard:
    """Would a refit have predicted the latest ``window`` games better than the online forecasts ``online_p``?

    The refit (k chosen among ``select_k``, one start) is fitted on the games
    before the window; the online rule then runs on from it through the window,
    predicting each game before it learns from it, as a ladder would have (a
    rate with a drift needs the games' ``times``, as :func:`replay` takes them).
    Players without a game before the window start from ``start`` (their
    initial vectors).  ``online_p`` are the window's pair-term forecasts the
    ladder served.  The auto-refit policy applies a refit only when it is better.
    """
    n = log.n_games
    if not 0 < window < n:
        raise RatingInputError("window", f"must be between 1 and {n - 1} games")
    before, after = log.take(np.arange(n - window)), log.take(np.arange(n - window, n))
    m = np.shape(start)[0]
    options = RefitOptions(l2=l2, restarts=1, seed=seed, select_k=select_k, seat_precision=seat_precision)
    trial = refit(before, m, k, options, progress=progress)
    played = np.bincount(before.member_player, minlength=m)
    games0: ArrayLike | None = played  # each player's games before the window; under the variance rule, variance
    later = None
    if isinstance(rate, VarianceRule):
        # The variances at the window's start, as the online rule left them (mathematics §3b).
        head = None if times is None else (np.asarray(times[0], dtype=np.float64)[: n - window], times[1])
        online = replay_history(start, before, rate, times=head, record=False)
        games0 = online.variance
        if times is not None:
            later = (np.asarray(times[0], dtype=np.float64)[n - window :], online.latest)
    elif times is not None:
        when = np.asarray(times[0], dtype=np.float64)
        _, games0, last = member_experience(before, rate.drift, None, m, (when[: n - window], times[1]))
        later = (when[n - window :], last)
    C = np.array(start, dtype=np.float64)
    C[played > 0] = trial.C[played > 0]
    seats = trial.seats
    if seats is not None and after.n_seats_needed > len(seats.advantage):  # a seat first named in the window
        fresh = Seats.fresh(after.n_seats_needed, seat_precision)
        fresh.advantage[: len(seats.advantage)], fresh.information[: len(seats.advantage)] = (
            seats.advantage,
            seats.information,
        )
        seats = fresh
    refit_p = replay_history(C, after, rate, games0=games0, seats=seats, times=later).pair_p
    terms = np.arange(len(after.pair_a))
    refit_loss = Metrics.of(refit_p, after, terms).log_loss
    online_loss = Metrics.of(np.asarray(online_p, dtype=np.float64), after, terms).log_loss
    return Guard(refit_loss < online_loss, trial.k, window, refit_loss, online_loss)
