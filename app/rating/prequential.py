"""Prequential log losses: each game predicted from the games before it only, as a ladder served it (mathematics §3).

The rate choice (:mod:`app.rating.tuning`) scores its candidate rules by these losses.  The candidates of a log of
two-player games are replayed together (:func:`prequential_losses_many`): one pass over the log's levels moves every
candidate's ratings at once, so 25 candidates cost a few times one replay, not 25 replays.  The variance rule's
candidates have theirs in :mod:`app.rating.variance_tuning`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.game_log import GameLog
from app.rating.model import Array, as_vectors, omega_apply, rowdot
from app.rating.refit.metrics import term_losses
from app.rating.replay import (
    Times,
    dependency_levels,
    level_bounds,
    member_experience,
    replay_history,
    two_player_singles,
)
from app.rating.seats import Seats
from app.rating.stacked import seats_learn, stacked_seats
from app.rating.update import LearningRate, side_games
from app.rating.variance import VarianceRule


def prequential_losses(
    C0: ArrayLike,
    log: GameLog,
    rate: LearningRate | VarianceRule,
    seats: Seats | None = None,
    times: Times = None,
    games0: ArrayLike | None = None,
) -> Array:
    """Each game's log loss, its outcome predicted from the games before it only: the rule replayed from ``C0``
    (and the state ``games0`` the players carry there, as :func:`~app.rating.replay.replay_history` takes it) at
    ``rate`` (its pair terms' losses, weighted as the fit weighs them)."""
    every = np.arange(len(log.pair_a))
    history = replay_history(C0, log, rate, games0=games0, seats=seats, times=times)
    term = term_losses(history.pair_p, log, every) * log.pair_weight
    return np.add.reduceat(term, log.pair_ptr[:-1]) if len(term) else np.zeros(0)


def prequential_losses_many(
    C0: ArrayLike,
    log: GameLog,
    rates: list[LearningRate],
    seats: Seats | list[Seats] | None = None,
    progress: Callable[[int, int], None] | None = None,
    times: Times = None,
) -> Array:
    """:func:`prequential_losses` of each rate (a row each), the rates replayed side by side in one pass; the
    seats start from ``seats``, or from ``seats[n]`` for rate n if a list is given.

    A log of two-player games is replayed level by level (games on one level
    share no player and no seat) with every rate's ratings stacked, so each level
    is one set of array operations for all of them, and every row equals
    :func:`prequential_losses` bit for bit.  (With seats, whose state every game
    shares, a level is one game: a million games are a million small steps, each
    taken for all rates at once.)  Other logs (teams, free-for-all) are replayed
    one rate at a time.
    """
    starts = seats if isinstance(seats, list) else [seats] * len(rates)
    if not two_player_singles(log):
        rows = []
        for n, rate in enumerate(rates):
            start = starts[n]
            rows.append(prequential_losses(C0, log, rate, None if start is None else start.copy(), times))
            if progress is not None:
                progress(n + 1, len(rates))
        return np.array(rows)
    C1 = as_vectors(C0, "C0")
    C = np.repeat(C1[None], len(rates), axis=0)
    out = np.empty((len(rates), log.n_games))
    if log.n_games == 0:
        return out
    level = dependency_levels(log, len(C1))
    order = np.argsort(level, kind="stable")
    i, j = log.member_player[0::2][order], log.member_player[1::2][order]
    # Experience depends on the rate's drift only: once for each drift.
    drifts = sorted({rate.drift for rate in rates})
    which = np.array([drifts.index(rate.drift) for rate in rates])
    played = np.array(
        [
            side_games(member_experience(log, drift, None, len(C1), times)[0], log.member_side, log.side_size)
            for drift in drifts
        ]
    )
    played_i, played_j = played[:, 0::2][:, order], played[:, 1::2][:, order]
    # Each rate's η(n) = η / √(1 + n/τ) is taken a level at a time (a rates × games array would be 400 MB at a
    # million games); τ = ∞ for a constant η gives η / √1 = η exactly, as LearningRate.at does.
    etas = np.array([rate.eta for rate in rates])[:, None]
    taus = np.array([np.inf if rate.tau is None else rate.tau for rate in rates])[:, None]
    outcome, shift, weight = log.pair_outcome[order], log.pair_shift[order], log.pair_weight[order]
    if log.side_seat is not None:
        seat_i, seat_j, advantage, information = stacked_seats(log, starts, order)
    bounds = level_bounds(level, int(level.max()))
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        a, b = i[lo:hi], j[lo:hi]
        ca, cb = C[:, a], C[:, b]
        oca, ocb = omega_apply(ca), omega_apply(cb)
        level_shift = shift[lo:hi]
        if log.side_seat is not None:
            sa, sb = seat_i[lo:hi], seat_j[lo:hi]
            level_shift = level_shift + (advantage[:, sa] - advantage[:, sb])  # summed in the replay's order
        p = expit(rowdot(ca, ocb) + level_shift)
        norm = np.sqrt(rowdot(ca, ca) + rowdot(cb, cb))
        w, s = weight[lo:hi], outcome[lo:hi]
        eta_i = etas / np.sqrt(1.0 + played_i[which, lo:hi] / taus)
        eta_j = etas / np.sqrt(1.0 + played_j[which, lo:hi] / taus)
        coef_a = np.divide(eta_i * w * (s - p), norm, out=np.zeros_like(p), where=norm > 0)
        coef_b = np.divide(eta_j * w * (s - p), norm, out=np.zeros_like(p), where=norm > 0)
        C[:, a] = ca + coef_a[..., None] * ocb
        C[:, b] = cb + (-coef_b)[..., None] * oca
        if log.side_seat is not None:
            seats_learn(advantage, information, sa, sb, w, s, p)
        out[:, order[lo:hi]] = term_losses(p, log, order[lo:hi]) * w
        if progress is not None:
            progress(n + 1, len(bounds) - 1)
    return out
