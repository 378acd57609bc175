"""Many variance rules replayed side by side over one log, for the rate choice (mathematics §3b, §3).

The levels of a log (mathematics §9) depend on who played, not on the ratings, so one pass over them can move
every candidate rule's ratings and variances at once.  For a log of two-player games each level is then one set
of array operations for all the candidates, performing, candidate by candidate, exactly the floating point
operations of :func:`app.rating.variance.step_variance` for two single players; so every row equals that
candidate's own replay bit for bit.  Other logs (teams, free-for-all) are replayed as copies of the log, one per
candidate, whose players are apart: a level of the copies is the level of every copy at once, one call of
:func:`~app.rating.variance.step_variance` whose games share no player, and each copy's arithmetic that of its
candidate's own replay (with seats, one candidate at a time).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.game_log import GameLog
from app.rating.model import Array, as_vectors, omega_apply, rowdot
from app.rating.refit.metrics import term_losses
from app.rating.replay import (
    Times,
    dependency_levels,
    level_bounds,
    replay_history,
    two_player_singles,
    variance_pair_p,
)
from app.rating.seats import Seats
from app.rating.stacked import seats_learn, stacked_seats
from app.rating.variance import VarianceRule, disc_steps, time_away


def variance_losses_many(
    C0: ArrayLike,
    log: GameLog,
    rules: list[VarianceRule],
    seats: Seats | list[Seats] | None = None,
    times: Times = None,
    progress: Callable[[int, int], None] | None = None,
) -> Array:
    """Each game's prequential log loss (a row per rule; its pair terms' losses weighted as the fit weighs them)
    under each of ``rules``, replayed from ``C0`` (and the seats from ``seats``, or ``seats[n]`` for rule n)."""
    starts = seats if isinstance(seats, list) else [seats] * len(rules)
    if not two_player_singles(log) and log.side_seat is None and all(start is None for start in starts):
        return _general_losses_many(as_vectors(C0, "C0"), log, rules, times, progress)
    if not two_player_singles(log):  # and seats: one rule at a time
        rows = []
        for n, rule in enumerate(rules):
            given = starts[n]
            start = None if given is None else given.copy()
            p = replay_history(C0, log, rule, seats=start, times=times).pair_p
            term = term_losses(p, log, np.arange(len(log.pair_a))) * log.pair_weight
            rows.append(np.add.reduceat(term, log.pair_ptr[:-1]) if len(term) else np.zeros(0))
            if progress is not None:
                progress(n + 1, len(rules))
        return np.array(rows)
    C1 = as_vectors(C0, "C0")
    out = np.empty((len(rules), log.n_games))
    if log.n_games == 0:
        return out
    C = np.repeat(C1[None], len(rules), axis=0)
    V = np.array([np.full(len(C1), rule.start) for rule in rules])
    if any(rule.drift > 0 for rule in rules) and times is None:
        raise RatingInputError("times", "a rule with a drift needs the games' times")
    member_time = None if times is None else np.repeat(np.asarray(times[0], dtype=np.float64), 2)
    away, _ = time_away(log.member_player, member_time, len(C1), None if times is None else times[1])
    growth = np.array([rule.growth(away) for rule in rules])
    shares = np.array([rule.shares(C1.shape[1] // 2) for rule in rules])
    level = dependency_levels(log, len(C1))
    order = np.argsort(level, kind="stable")
    i, j = log.member_player[0::2][order], log.member_player[1::2][order]
    grow_i, grow_j = growth[:, 0::2][:, order], growth[:, 1::2][:, order]
    outcome, shift, weight = log.pair_outcome[order], log.pair_shift[order], log.pair_weight[order]
    if log.side_seat is not None:
        seat_i, seat_j, advantage, information = stacked_seats(log, starts, order)
    bounds = level_bounds(level, int(level.max()))
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        a, b = i[lo:hi], j[lo:hi]
        ua, ub = V[:, a] + grow_i[:, lo:hi], V[:, b] + grow_j[:, lo:hi]
        ca, cb = C[:, a], C[:, b]
        oca, ocb = omega_apply(ca), omega_apply(cb)
        level_shift = shift[lo:hi]
        if log.side_seat is not None:
            sa, sb = seat_i[lo:hi], seat_j[lo:hi]
            level_shift = level_shift + (advantage[:, sa] - advantage[:, sb])
        p = expit(rowdot(ca, ocb) + level_shift)
        info = p * (1.0 - p)
        w, s = weight[lo:hi], outcome[lo:hi]
        kick = w * (s - p) / (1.0 + info * (ua + ub))
        da, db = disc_steps(ca, cb, oca, ocb, kick, shares)
        C[:, a] = ca + ua[..., None] * da
        C[:, b] = cb + ub[..., None] * db
        wi = w * info
        V[:, a] = ua / (1.0 + ua * (wi / (1.0 * (1.0 + info * (0.0 + ub)))))
        V[:, b] = ub / (1.0 + ub * (wi / (1.0 * (1.0 + info * (0.0 + ua)))))
        if log.side_seat is not None:
            seats_learn(advantage, information, sa, sb, w, s, p)
        out[:, order[lo:hi]] = term_losses(p, log, order[lo:hi]) * w
        if progress is not None:
            progress(n + 1, len(bounds) - 1)
    return out


#: The pair and membership rows the copies of a log replayed at once may hold (a few hundred MB at most): more
#: candidates than that are replayed in turns.
STACKED_ROWS = 4_000_000


def _general_losses_many(
    C1: Array, log: GameLog, rules: list[VarianceRule], times: Times, progress: Callable[[int, int], None] | None
) -> Array:
    """:func:`variance_losses_many` of a log of teams or free-for-alls without seats: the rules replayed side by
    side as copies of the log (:func:`app.rating.replay.variance_pair_p`), copy r's players ``r * m`` on."""
    m, k = len(C1), C1.shape[1] // 2
    if log.n_games == 0:
        return np.empty((len(rules), 0))
    if any(rule.drift > 0 for rule in rules) and times is None:
        raise RatingInputError("times", "a rule with a drift needs the games' times")
    opponents = np.repeat(np.diff(log.side_ptr) - 1, np.diff(log.member_ptr))
    member_time = None if times is None else np.repeat(np.asarray(times[0], dtype=np.float64), np.diff(log.member_ptr))
    away, _ = time_away(log.member_player, member_time, m, None if times is None else times[1])
    level = dependency_levels(log, m)
    out = np.empty((len(rules), log.n_games))
    per = max(1, STACKED_ROWS // max(1, len(log.pair_a) + len(log.member_player)))
    for lo in range(0, len(rules), per):
        part = rules[lo : lo + per]
        copies = GameLog.concat([log] * len(part), [r * m for r in range(len(part))])
        C = np.tile(C1, (len(part), 1))
        V = np.repeat([rule.start for rule in part], m).astype(np.float64)
        growth = np.concatenate([rule.growth(away, opponents) for rule in part])
        shares = np.repeat(np.array([rule.shares(k) for rule in part]), len(log.pair_a), axis=0)
        p = variance_pair_p(C, copies, V, growth, shares, np.tile(level, len(part)))
        term = term_losses(p, copies, np.arange(len(copies.pair_a))) * copies.pair_weight
        out[lo : lo + len(part)] = np.add.reduceat(term, copies.pair_ptr[:-1]).reshape(len(part), log.n_games)
        if progress is not None:
            progress(lo + len(part), len(rules))
    return out
