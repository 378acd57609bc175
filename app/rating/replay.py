"""Exact, batched replay of an ordered game log (mathematics §9 "Replay").

Games that share no player commute.  Give each game the level
``1 + max(level of the previous game of each of its players)``: games on one
level share no player, and every game a game depends on is on an earlier
level.  Applying the levels in order, each as one vectorised
:func:`~app.rating.update.step_disjoint`, therefore gives exactly the vectors of
applying the games one by one (same operations on the same numbers).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.experience import experience_before
from app.rating.game_log import Game, GameLog, IntArray
from app.rating.model import Array, as_vectors, omega_apply, rowdot
from app.rating.seats import Seats, seat_shift, seat_step
from app.rating.update import LearningRate, as_rate, side_games, step_disjoint
from app.rating.variance import VarianceRule, step_variance, time_away


def dependency_levels(log: GameLog, n_players: int) -> IntArray:
    """Level of every game (1-based): games on one level share no player and no seat (a seat is shared state)."""
    last = [0] * (n_players + log.n_seats_needed)  # a seat s is the key n_players + s
    players = log.member_player.tolist()
    levels = [0] * log.n_games
    if log.side_seat is None and two_player_singles(log):
        # Two single players per game: the common case, kept tight.
        for g, (i, j) in enumerate(zip(players[0::2], players[1::2], strict=True)):
            level = (last[i] if last[i] > last[j] else last[j]) + 1
            last[i] = last[j] = levels[g] = level
    else:
        ptr, sptr = log.member_ptr.tolist(), log.side_ptr.tolist()
        seat_of = [] if log.side_seat is None else log.side_seat.tolist()
        for g in range(log.n_games):
            keys = players[ptr[g] : ptr[g + 1]] + [n_players + x for x in seat_of[sptr[g] : sptr[g + 1]] if x >= 0]
            level = max(last[p] for p in keys) + 1
            for p in keys:
                last[p] = level
            levels[g] = level
    return np.asarray(levels, dtype=np.int64)


@dataclass(frozen=True)
class History:
    """What every game of a replayed log did, in log order (mathematics §13 rating history).

    ``before[t]`` and ``after[t]`` are the vectors of membership ``t`` (the
    log's ``member_player[t]``) around its game; ``expected[a]`` and
    ``actual[a]`` are side ``a``'s rank-share scores (mathematics §4); ``pair_p[q]`` is the
    pre-game P(side a beats side b) of pair term q, a prequential forecast.  With seats,
    ``seats`` is their state after the log and ``seat_before[a]`` side a's seat's
    (advantage, information) before its game (NaN for a side without a seat).
    ``experience`` is every player's after the log (their games, with a drift
    worn by time away: :mod:`app.rating.experience`), and with a drift ``latest``
    their latest game time (None without).  Under a :class:`~app.rating.variance.VarianceRule`,
    ``variance`` is every player's variance after the log (and so is ``experience``: the state the rule
    carries from game to game) and ``member_variance[t]`` membership t's after its game (None under the
    shrinking-step rule).
    """

    C: Array
    before: Array
    after: Array
    expected: Array
    actual: Array
    pair_p: Array
    seats: Seats | None = None
    seat_before: Array | None = None
    experience: Array | None = None
    latest: Array | None = None
    variance: Array | None = None
    member_variance: Array | None = None


Progress = Callable[[int, int], None] | None


Rate = float | LearningRate | VarianceRule
#: Each game's time and each player's latest game time before the log (NaN: none), in years; None: undated.
Times = tuple[ArrayLike, ArrayLike | None] | None


def replay(
    C0: ArrayLike,
    games: GameLog | Sequence[Game],
    eta: Rate,
    progress: Progress = None,
    games0: ArrayLike | None = None,
    seats: Seats | None = None,
    times: Times = None,
) -> Array:
    """Ratings after applying ``games`` in order to the initial matrix ``C0`` (not modified).

    Bit-for-bit equal to calling :func:`~app.rating.update.apply_game` game by
    game.  ``eta`` is a rate or a :class:`~app.rating.update.LearningRate`, or a
    :class:`~app.rating.variance.VarianceRule` (then ``games0`` are each player's
    variance before the log, the rule's ``start`` by default);
    ``games0`` are the games (the experience) each player had before the log (0
    by default); ``seats`` the learned seats' state before it (fresh by default;
    not modified).  A rate with a drift needs the ``times``: each game's time and
    each player's latest game time before the log (NaN: none), in years.
    ``progress(done, total)`` is called after each level.
    """
    return replay_history(C0, games, eta, progress, games0, seats, times, record=False).C


def replay_history(
    C0: ArrayLike,
    games: GameLog | Sequence[Game],
    eta: Rate,
    progress: Progress = None,
    games0: ArrayLike | None = None,
    seats: Seats | None = None,
    times: Times = None,
    record: bool = True,
) -> History:
    """:func:`replay` that also returns every membership's vectors before and after its game.

    The same floating point operations as :func:`replay`, so ``History.C`` is
    bit-for-bit the same matrix; this is what a bulk import stores.  With ``record``
    False, only the ratings (and the state after the log) are kept.
    """
    C, log = _prepare(C0, games)
    state = _seats(log, seats)
    kept = None
    if record:
        dim = C.shape[1]
        before = np.empty((len(log.member_player), dim))
        seat_before = None if state is None else np.full((len(log.side_size), 2), np.nan)
        kept = (before, np.empty_like(before), np.empty(len(log.pair_a)), seat_before)
    variance: Array | None
    if isinstance(eta, VarianceRule):
        V, growth, latest = _member_variances(log, eta, games0, len(C), times)
        member_variance = np.empty(len(log.member_player)) if record else None
        _run(C, log, np.zeros(0), progress, kept, state, (V, growth, member_variance, eta.shares(C.shape[1] // 2)))
        experience = variance = V  # the state the rule carries from game to game
    else:
        side_eta, experience, latest = _member_rates(log, as_rate(eta), games0, len(C), times)
        _run(C, log, side_eta, progress, kept, state)
        variance = member_variance = None
    if kept is None:
        empty = np.empty((0, C.shape[1]))
        return History(
            C, empty, empty, np.zeros(0), np.zeros(0), np.zeros(0), state, None, experience, latest, variance
        )
    before, after, pair_p, seat_before = kept
    expected, actual = log.side_share(pair_p), log.side_share(log.pair_outcome)
    return History(
        C, before, after, expected, actual, pair_p, state, seat_before, experience, latest, variance, member_variance
    )


def _member_variances(
    log: GameLog, rule: VarianceRule, variance0: ArrayLike | None, n_players: int, times: Times
) -> tuple[Array, Array, Array | None]:
    """Every player's variance before the log (a copy; the rule's start by default), every membership's growth
    before its game (:meth:`~app.rating.variance.VarianceRule.growth`), and, with ``times``, every player's latest
    game time after the log."""
    V = np.full(n_players, rule.start) if variance0 is None else np.array(variance0, dtype=np.float64)
    if V.shape == (n_players,):
        V[np.isnan(V)] = rule.start  # none yet
    if V.shape != (n_players,) or not np.all(np.isfinite(V)) or np.any(V <= 0):
        raise RatingInputError("variances", f"expected {n_players} finite variances > 0")
    opponents = np.repeat(np.diff(log.side_ptr) - 1, np.diff(log.member_ptr))
    if times is None:
        if rule.drift > 0:
            raise RatingInputError("times", "a rule with a drift needs the games' times")
        return V, rule.growth(np.zeros(len(log.member_player)), opponents), None
    member_time = np.repeat(np.asarray(times[0], dtype=np.float64), np.diff(log.member_ptr))
    away, latest = time_away(log.member_player, member_time, n_players, times[1])
    return V, rule.growth(away, opponents), latest


def _seats(log: GameLog, seats: Seats | None) -> Seats | None:
    """The seat state a replay works on (a copy), or None when the log names no seat and none was given."""
    if seats is None:
        return None if log.side_seat is None else Seats.fresh(log.n_seats_needed)
    if log.n_seats_needed > len(seats.advantage):
        raise RatingInputError("games", f"seat index {log.n_seats_needed - 1} is outside the seats given")
    return seats.copy()


def games_before(log: GameLog, games0: ArrayLike | None, n_players: int) -> Array:
    """For every membership, the games its player had played before that game (``games0`` + earlier ones)."""
    start = np.zeros(n_players) if games0 is None else np.asarray(games0, dtype=np.float64)
    player = log.member_player
    order = np.argsort(player, kind="stable")
    first = np.searchsorted(player[order], player[order], side="left")
    earlier = np.empty(len(player))
    earlier[order] = np.arange(len(player)) - first
    return start[player] + earlier


def member_experience(
    log: GameLog, drift: float, games0: ArrayLike | None, n_players: int, times: Times
) -> tuple[Array, Array, Array | None]:
    """Every membership's experience before its game; every player's after the log, and their latest game time
    (:mod:`app.rating.experience`).  With no drift, the games played (``games0`` + those in the log), and no
    times (None): they do not count."""
    start = np.zeros(n_players) if games0 is None else np.asarray(games0, dtype=np.float64)
    if drift == 0:
        return games_before(log, start, n_players), start + np.bincount(log.member_player, minlength=n_players), None
    if times is None:
        raise RatingInputError("times", "a learning rate with a drift needs the games' times")
    member_time = np.repeat(np.asarray(times[0], dtype=np.float64), np.diff(log.member_ptr))
    return experience_before(log.member_player, member_time, n_players, drift, start, times[1])


def _member_rates(
    log: GameLog, rate: LearningRate, games0: ArrayLike | None, n_players: int, times: Times
) -> tuple[Array, Array, Array | None]:
    """η of every side of the log, at its members' mean experience before the game; and every player's
    experience and (with a drift) latest game time after the log."""
    played, after, latest = member_experience(log, rate.drift, games0, n_players, times)
    if rate.tau is None:
        return np.full(len(log.side_size), rate.eta), after, latest
    return rate.at(side_games(played, log.member_side, log.side_size)), after, latest


def _prepare(C0: ArrayLike, games: GameLog | Sequence[Game]) -> tuple[Array, GameLog]:
    C = as_vectors(C0, "C0").copy()
    if C.ndim != 2:
        raise RatingInputError("C0", "must be an (m, 2k) matrix")
    log = games if isinstance(games, GameLog) else GameLog.from_games(games)
    if log.n_players_needed > len(C):
        raise RatingInputError("games", f"player index {log.n_players_needed - 1} is outside the rating matrix")
    return C, log


def _run(
    C: Array, log: GameLog, side_eta: Array, progress: Progress, record, seats: Seats | None, variance=None
) -> None:
    """Replay the log level by level; ``variance`` (the players' variances, each membership's growth, where to
    record each membership's variance after its game, and each disc's share of a step; or None) selects the
    variance rule."""
    if log.n_games == 0:
        return
    game_level = dependency_levels(log, len(C))
    side_seat = log.side_seat if log.side_seat is not None else np.full(len(log.side_size), -1, dtype=np.int64)
    if variance is None and two_player_singles(log):
        _replay_pairs(C, log, game_level, side_eta, progress, record, seats, side_seat)
    else:
        _replay_general(C, log, game_level, side_eta, progress, record, seats, side_seat, variance)


def variance_pair_p(C: Array, log: GameLog, V: Array, growth: Array, pair_shares: Array, game_level: IntArray) -> Array:
    """The variance rule replayed in place on ``C`` and ``V`` over ``log`` (no seats), whose games' levels are
    ``game_level`` (:func:`dependency_levels`), each membership's variance growing by ``growth`` before its game
    and each pair's step shared among the discs as ``pair_shares`` says (a row per pair): every pair's p before its
    game.  :func:`replay_history` under a :class:`~app.rating.variance.VarianceRule`, taking its parameters per
    membership and per pair: the rate choice replays many rules at once as copies of a log whose players are
    apart (:mod:`app.rating.variance_tuning`)."""
    pair_p = np.empty(len(log.pair_a))
    if log.n_games:
        side_seat = np.full(len(log.side_size), -1, dtype=np.int64)
        variance = (V, growth, None, pair_shares)
        _replay_general(C, log, game_level, np.zeros(0), None, (None, None, pair_p, None), None, side_seat, variance)
    return pair_p


def two_player_singles(log: GameLog) -> bool:
    return len(log.member_player) == 2 * log.n_games and np.array_equal(log.member_ptr, 2 * np.arange(log.n_games + 1))


def level_bounds(level_of: IntArray, n_levels: int) -> IntArray:
    """Start of each level's rows (levels are 1-based) in an array sorted by level."""
    return np.concatenate(([0], np.cumsum(np.bincount(level_of, minlength=n_levels + 1)[1:])))


def _replay_pairs(
    C: Array,
    log: GameLog,
    game_level: IntArray,
    side_eta: Array,
    progress: Progress,
    record,
    seats: Seats | None,
    side_seat: IntArray,
) -> None:
    """Two single players per game: step_disjoint without the team and scatter bookkeeping.

    Same floating point operations as the general kernel (a team of one's mean is
    its member's vector; each side receives exactly one pair term), hence the
    same vectors.
    """
    order = np.argsort(game_level, kind="stable")
    i, j = log.member_player[0::2][order], log.member_player[1::2][order]
    eta_i, eta_j = side_eta[0::2][order], side_eta[1::2][order]
    outcome, shift, weight = log.pair_outcome[order], log.pair_shift[order], log.pair_weight[order]
    seat_i, seat_j = side_seat[0::2][order], side_seat[1::2][order]
    bounds = level_bounds(game_level, int(game_level.max()))
    for lo, hi in itertools.pairwise(bounds):
        a, b = i[lo:hi], j[lo:hi]
        ca, cb = C[a], C[b]
        oca, ocb = omega_apply(ca), omega_apply(cb)
        level_shift = shift[lo:hi]
        if seats is not None:
            sa, sb = seat_i[lo:hi], seat_j[lo:hi]
            if record is not None:
                _keep_seats(record[3], seats, 2 * order[lo:hi], sa)
                _keep_seats(record[3], seats, 2 * order[lo:hi] + 1, sb)
            level_shift = level_shift + seat_shift(seats.advantage, sa, sb)
        p = expit(rowdot(ca, ocb) + level_shift)
        norm = np.sqrt(rowdot(ca, ca) + rowdot(cb, cb))
        w, s = weight[lo:hi], outcome[lo:hi]
        coef_a = np.divide(eta_i[lo:hi] * w * (s - p), norm, out=np.zeros_like(p), where=norm > 0)
        coef_b = np.divide(eta_j[lo:hi] * w * (s - p), norm, out=np.zeros_like(p), where=norm > 0)
        C[a] = ca + coef_a[:, None] * ocb
        C[b] = cb + (-coef_b)[:, None] * oca
        if seats is not None:
            seat_step(seats, sa, sb, w, s, p)
        if record is not None:
            before, after, pair_p, _ = record
            g = order[lo:hi]
            before[2 * g], before[2 * g + 1] = ca, cb
            after[2 * g], after[2 * g + 1] = C[a], C[b]
            pair_p[g] = p
        if progress is not None:
            progress(int(hi), log.n_games)


def _keep_seats(seat_before: Array, seats: Seats, sides: IntArray, seat: IntArray) -> None:
    """Record the state of the seats ``seat`` (-1: none) of ``sides`` before their game."""
    has = seat >= 0
    seat_before[sides[has], 0] = seats.advantage[seat[has]]
    seat_before[sides[has], 1] = seats.information[seat[has]]


def _replay_general(
    C: Array,
    log: GameLog,
    game_level: IntArray,
    side_eta: Array,
    progress: Progress,
    record,
    seats: Seats | None,
    side_seat: IntArray,
    variance=None,
) -> None:
    n_levels = int(game_level.max())
    member_level = np.repeat(game_level, np.diff(log.member_ptr))
    side_level = np.repeat(game_level, np.diff(log.side_ptr))
    pair_level = np.repeat(game_level, np.diff(log.pair_ptr))
    # Stable sorts keep game order within a level and member/side/pair order within a game.
    om = np.argsort(member_level, kind="stable")
    osd = np.argsort(side_level, kind="stable")
    op = np.argsort(pair_level, kind="stable")
    new_side = np.empty_like(osd)
    new_side[osd] = np.arange(len(osd))

    member_player = log.member_player[om]
    member_side = new_side[log.member_side[om]]
    side_size = log.side_size[osd]
    if variance is not None:
        V, growth_sorted, member_variance, shares = variance[0], variance[1][om], variance[2], variance[3]
        pair_shares = shares[op] if np.ndim(shares) == 2 else None  # a row per pair, or one for all
    else:
        pair_shares = None
        eta_sorted = side_eta[osd]
    pair_a = new_side[log.pair_a[op]]
    pair_b = new_side[log.pair_b[op]]
    outcome, shift, weight = log.pair_outcome[op], log.pair_shift[op], log.pair_weight[op]
    pair_seat_a, pair_seat_b = side_seat[log.pair_a[op]], side_seat[log.pair_b[op]]

    mb, sb, pb = (level_bounds(x, n_levels) for x in (member_level, side_level, pair_level))
    game_count = level_bounds(game_level, n_levels)
    for lv in range(n_levels):
        m, s, p = slice(mb[lv], mb[lv + 1]), slice(sb[lv], sb[lv + 1]), slice(pb[lv], pb[lv + 1])
        s0 = sb[lv]
        if record is not None and record[0] is not None:
            record[0][om[m]] = C[member_player[m]]
        level_shift = shift[p]
        if seats is not None:
            if record is not None:
                _keep_seats(record[3], seats, osd[s], side_seat[osd[s]])
            level_shift = level_shift + seat_shift(seats.advantage, pair_seat_a[p], pair_seat_b[p])
        games = (member_player[m], member_side[m] - s0, side_size[s], pair_a[p] - s0, pair_b[p] - s0)
        if variance is None:
            p_level = step_disjoint(C, *games, outcome[p], level_shift, weight[p], eta_sorted[s])
        else:
            level_shares = shares if pair_shares is None else pair_shares[p]
            p_level = step_variance(C, V, *games, outcome[p], level_shift, weight[p], growth_sorted[m], level_shares)
            if member_variance is not None:
                member_variance[om[m]] = V[member_player[m]]
        if seats is not None:
            seat_step(seats, pair_seat_a[p], pair_seat_b[p], weight[p], outcome[p], p_level)
        if record is not None:
            if record[1] is not None:
                record[1][om[m]] = C[member_player[m]]
            record[2][op[p]] = p_level
        if progress is not None:
            progress(int(game_count[lv + 1]), log.n_games)
