"""The normalised, distributed mElo update (mathematics §3-§6, [Guide] eqs. 4-5).

For a pair of sides (a, b) of an N-side game, with pre-game side vectors C_a, C_b
(team means, mathematics §6) and seat advantages h:

    p_ab = σ(C_aᵀ Ω C_b + h_a - h_b)
    n_ab = sqrt(|C_a|² + |C_b|²)
    δ_ab = η (S_ab - p_ab) / (n_ab (N - 1))
    ΔC_a += δ_ab Ω C_b,   ΔC_b -= δ_ab Ω C_a

and every member of side a moves by the whole ΔC_a.  For N = 2 and single
players this is exactly [Guide] eqs. 4-5.  Only the game's participants change
(the distributed property); η = 0 changes nothing.

:func:`step_disjoint` applies any set of games that share no player at once.
:func:`apply_game` (one game) and :func:`app.rating.replay.replay` (a whole log,
batched by dependency level) both call it, so they perform the same floating
point operations and agree bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from app.rating.errors import RatingInputError
from app.rating.game_log import Game, GameLog, IntArray, side_shares
from app.rating.model import Array, as_vectors, omega_apply, rowdot
from app.rating.variance import VarianceRule, step_variance


def check_eta(eta: float) -> float:
    """Return η if it is a finite learning rate ≥ 0."""
    try:
        value = float(eta)
    except (TypeError, ValueError) as exc:
        raise RatingInputError("eta", "must be a number") from exc
    if not np.isfinite(value) or value < 0:
        raise RatingInputError("eta", f"must be a finite number >= 0, got {eta!r}")
    return value


@dataclass(frozen=True)
class LearningRate:
    """A player's learning rate at experience n: η(n) = eta / sqrt(1 + n / tau); with tau None, η(n) = eta.

    The constant rate is [Guide]'s.  A shrinking one moves newcomers fast and
    settles regulars, while every step stays normalised and distributed: each
    side of a game steps with its own η, at its members' mean experience.  A
    player's experience is the games they played before, worn away by ``drift``
    (logits a year) while they were away (:mod:`app.rating.experience`); with
    drift 0 it is their number of games.
    """

    eta: float
    tau: float | None = None
    drift: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", check_eta(self.eta))
        if self.tau is not None and not (np.isfinite(self.tau) and self.tau > 0):
            raise RatingInputError("tau", f"must be a finite number > 0, got {self.tau!r}")
        if not (np.isfinite(self.drift) and self.drift >= 0):
            raise RatingInputError("drift", f"must be a finite number >= 0, got {self.drift!r}")

    def at(self, games: ArrayLike) -> Array:
        n = np.asarray(games, dtype=np.float64)
        if self.tau is None:
            return np.full(n.shape, self.eta)
        return self.eta / np.sqrt(1.0 + n / self.tau)


def as_rate(eta: float | LearningRate) -> LearningRate:
    return eta if isinstance(eta, LearningRate) else LearningRate(eta)


def side_games(games: Array, member_side: IntArray, side_size: Array) -> Array:
    """Each side's mean number of games played (or experience) before this one."""
    return np.bincount(member_side, weights=games, minlength=len(side_size)) / side_size


def side_means(C: Array, member_player: IntArray, member_side: IntArray, side_size: Array) -> Array:
    """Team vectors C_a = mean of the members' vectors (mathematics §6), summed in member order."""
    n_sides = len(side_size)
    cm = C[member_player]
    out = np.empty((n_sides, C.shape[1]))
    for col in range(C.shape[1]):
        out[:, col] = np.bincount(member_side, weights=cm[:, col], minlength=n_sides)
    out /= side_size[:, None]
    return out


def step_disjoint(
    C: Array,
    member_player: IntArray,
    member_side: IntArray,
    side_size: Array,
    pair_a: IntArray,
    pair_b: IntArray,
    pair_outcome: Array,
    pair_shift: Array,
    pair_weight: Array,
    eta: float | Array,
) -> Array:
    """Apply games that share no player, in place on the rows of ``C``; return p_ab per pair.

    Side indices are local to the arguments (0 … len(side_size)-1).  All terms
    use pre-game vectors (simultaneous update, mathematics §3).  ``eta`` is one rate,
    or one per side (:class:`LearningRate`).
    """
    n_sides = len(side_size)
    side = side_means(C, member_player, member_side, side_size)
    ca, cb = side[pair_a], side[pair_b]
    oca, ocb = omega_apply(ca), omega_apply(cb)
    p = expit(rowdot(ca, ocb) + pair_shift)
    norm = np.sqrt(rowdot(ca, ca) + rowdot(cb, cb))
    # n = 0 only if both sides are exactly zero; then Ω C_b = 0 too and there is no direction to move.
    eta_side = np.broadcast_to(np.asarray(eta, dtype=np.float64), (n_sides,))
    coef_a = np.divide(eta_side[pair_a] * pair_weight * (pair_outcome - p), norm, out=np.zeros_like(p), where=norm > 0)
    coef_b = np.divide(eta_side[pair_b] * pair_weight * (pair_outcome - p), norm, out=np.zeros_like(p), where=norm > 0)
    step = np.empty_like(side)
    for col in range(C.shape[1]):
        step[:, col] = np.bincount(pair_a, weights=coef_a * ocb[:, col], minlength=n_sides) + np.bincount(
            pair_b, weights=-coef_b * oca[:, col], minlength=n_sides
        )
    C[member_player] = C[member_player] + step[member_side]
    return p


@dataclass(frozen=True)
class GameResult:
    """What one game did.

    ``players[t]`` (a row index of the rating matrix) is on side ``member_side[t]``
    and moved from ``before[t]`` to ``after[t]``.  ``actual`` and ``expected`` are
    each side's rank-share score (mathematics §4); both sum to 1.  ``probability[a, b]``
    is P(side a beats side b) before the game.  Under the variance rule ``variance[t]`` is member t's variance
    after the game (None under the shrinking-step rule).
    """

    players: IntArray
    member_side: IntArray
    before: Array
    after: Array
    actual: Array
    expected: Array
    probability: Array
    variance: Array | None = None


def apply_game(
    C: ArrayLike,
    game: Game,
    eta: float | LearningRate | VarianceRule,
    games: ArrayLike | None = None,
    away: ArrayLike | None = None,
) -> GameResult:
    """Apply one game to the rating matrix ``C`` (not modified) and return the new vectors.

    Parameters
    ----------
    C : (m, 2k) rating matrix; the game's sides hold row indices into it.
    game : the sides, ranks and optional advantages.
    eta : learning rate η ≥ 0 (η = 0 freezes the ladder), or a :class:`LearningRate`, or a
        :class:`~app.rating.variance.VarianceRule`.
    games : each member's (in ``game.players`` order) games played, or experience, before this one; 0 by default.
        Under a variance rule: each member's variance after their previous game (the rule's start by default).
    away : under a variance rule, each member's years since their previous game (0 by default).

    Implements mathematics §3-§6: [Guide] eqs. 4-5 for two players, the rank-share
    generalisation of [Expanding] for N sides, team means for ad-hoc teams.
    """
    C = as_vectors(C, "C")
    if C.ndim != 2:
        raise RatingInputError("C", "must be an (m, 2k) matrix")
    log = GameLog.from_games([game])
    players = log.member_player
    if games is None:
        played = np.full(len(players), eta.start if isinstance(eta, VarianceRule) else 0.0)
    else:
        played = np.asarray(games, dtype=np.float64)
    if played.shape != players.shape:
        raise RatingInputError("games", f"expected {len(players)} counts, one per member")
    if players.max() >= len(C):
        raise RatingInputError("sides", f"player index {players.max()} is outside the rating matrix")
    before = C[players]
    local = before.copy()
    members = np.arange(len(players))
    sides = (log.member_side, log.side_size, log.pair_a, log.pair_b, log.pair_outcome, log.pair_shift, log.pair_weight)
    variance = None
    if isinstance(eta, VarianceRule):
        if not (np.all(np.isfinite(played)) and np.all(played > 0)):
            raise RatingInputError("games", "variances must be finite and > 0")
        variance = played.copy()
        growth = eta.growth(np.zeros(len(players)) if away is None else away, len(game.sides) - 1)
        p = step_variance(local, variance, members, *sides, growth, eta.shares(local.shape[1] // 2))
    else:
        rate = as_rate(eta)
        p = step_disjoint(local, members, *sides, rate.at(side_games(played, log.member_side, log.side_size)))
    n = len(game.sides)
    return GameResult(
        players=players,
        member_side=log.member_side,
        before=before,
        after=local,
        actual=side_shares(log.pair_a, log.pair_b, log.pair_outcome, n),
        expected=side_shares(log.pair_a, log.pair_b, p, n),
        probability=_pair_matrix(log.pair_a, log.pair_b, p, n),
        variance=variance,
    )


def predict_match(C: ArrayLike, game: Game) -> tuple[Array, Array]:
    """Win-probability matrix P[a, b] and expected scores E_a of a match (mathematics §7).

    ``game.ranks`` is ignored (pass any N ranks); advantages are used.
    """
    C = as_vectors(C, "C")
    log = GameLog.from_games([game])
    side = side_means(C, log.member_player, log.member_side, log.side_size)
    ca, cb = side[log.pair_a], side[log.pair_b]
    p = expit(rowdot(ca, omega_apply(cb)) + log.pair_shift)
    n = len(game.sides)
    return _pair_matrix(log.pair_a, log.pair_b, p, n), side_shares(log.pair_a, log.pair_b, p, n)


def _pair_matrix(a: IntArray, b: IntArray, p: Array, n: int) -> Array:
    out = np.full((n, n), 0.5)
    out[a, b] = p
    out[b, a] = 1.0 - p
    return out


def unnormalised_update(ci: ArrayLike, cj: ArrayLike, outcome: float, eta: float) -> tuple[Array, Array]:
    """The original, un-normalised mElo step of [Guide] eq. 2 (Balduzzi et al.).

    Kept only as a named baseline: it suffers the exponential-shrinkage feedback
    loop of [Guide] §3.1-3.2 that the normalised rule cures.
    """
    ci, cj = as_vectors(ci, "ci"), as_vectors(cj, "cj")
    eta = check_eta(eta)
    delta = eta * (outcome - expit(rowdot(ci, omega_apply(cj))))
    return ci + delta * omega_apply(cj), cj - delta * omega_apply(ci)
